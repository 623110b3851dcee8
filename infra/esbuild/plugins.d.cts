import type { Plugin } from 'esbuild';

/** See plugins.cjs. */
declare const esbuildPlugins: Plugin[];
export = esbuildPlugins;
