import type { Plugin } from 'esbuild';

/** See native-addons.cjs. */
declare const nativeAddonPlugins: Plugin[];
export = nativeAddonPlugins;
