// Flat config: recommended JS + type-aware TypeScript rules for the whole tree, and the
// dependency rules of docs/architecture.md as errors, so the next wrong-way import fails CI.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Which folders of src/ each folder may not import: the core (config, source, render, store,
 * cluster, apply, drift, sync, dashboard and the files at src/ root) never imports the adapters (cli,
 * serve, aws); serve and aws never import cli; inside the core, lower layers never import
 * higher ones (config <- render, store, cluster <- source, apply <- drift <- sync; config <-
 * notify <- sync <- dashboard).
 */
const ADAPTERS = ['cli', 'serve', 'aws'];
const FORBIDDEN = {
  '': [
    ...ADAPTERS,
    'config',
    'source',
    'render',
    'store',
    'cluster',
    'apply',
    'drift',
    'notify',
    'sync',
    'dashboard',
  ],
  config: [
    ...ADAPTERS,
    'source',
    'render',
    'store',
    'cluster',
    'apply',
    'drift',
    'notify',
    'sync',
    'dashboard',
  ],
  render: [
    ...ADAPTERS,
    'source',
    'store',
    'cluster',
    'apply',
    'drift',
    'notify',
    'sync',
    'dashboard',
  ],
  store: [
    ...ADAPTERS,
    'source',
    'render',
    'cluster',
    'apply',
    'drift',
    'notify',
    'sync',
    'dashboard',
  ],
  cluster: [
    ...ADAPTERS,
    'source',
    'render',
    'store',
    'apply',
    'drift',
    'notify',
    'sync',
    'dashboard',
  ],
  source: [...ADAPTERS, 'store', 'cluster', 'apply', 'drift', 'notify', 'sync', 'dashboard'],
  apply: [...ADAPTERS, 'source', 'store', 'drift', 'notify', 'sync', 'dashboard'],
  drift: [...ADAPTERS, 'source', 'store', 'notify', 'sync', 'dashboard'],
  // Notifications: events in, receivers out; they know config and nothing of how jobs run.
  notify: [
    ...ADAPTERS,
    'source',
    'render',
    'store',
    'cluster',
    'apply',
    'drift',
    'sync',
    'dashboard',
  ],
  sync: [...ADAPTERS, 'dashboard'],
  // The dashboard's use-cases (read model, actions, routes) sit on top of sync.
  dashboard: ADAPTERS,
  serve: ['cli', 'aws'],
  aws: ['cli', 'serve'],
  cli: ['aws'],
};

/**
 * Behind a dynamic `import()` of an SDK package, a one-file Lambda bundle keeps every command
 * and schema the package re-exports (docs/architecture.md, Bundles).
 */
const AWS_SDK_DYNAMIC_IMPORT =
  'import an @aws-sdk client by name in a module of ours and load that module lazily, not the package (docs/architecture.md, Bundles)';

/** A path pattern matching a relative import of `folder` of src/ from anywhere in src/. */
const folderPattern = (folder) => `^\\.{1,2}/(\\.\\./)*(src/)?${folder}/`;

function dependencyRules(folder, forbidden) {
  const message = `src/${folder || '(root)'} may not import ${forbidden.map((f) => `src/${f}`).join(', ')} (docs/architecture.md, dependency rules)`;
  const regex = `(${forbidden.map(folderPattern).join('|')})`;
  return {
    files: folder === '' ? ['src/*.ts'] : [`src/${folder}/**/*.ts`],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex, message }] }],
      // Dynamic imports are loaded lazily but are dependencies all the same.
      'no-restricted-syntax': [
        'error',
        { selector: `ImportExpression[source.value=/${regex.replaceAll('/', '\\/')}/]`, message },
        {
          selector: 'ImportExpression[source.value=/^@aws-sdk\\//]',
          message: AWS_SDK_DYNAMIC_IMPORT,
        },
      ],
    },
  };
}

/** What handlers/ may not import: the CLI and serve. */
const HANDLERS_FORBIDDEN = '^(\\.\\./)+src/(cli|serve)/';
const HANDLERS_RULE = 'handlers/ import src/aws and the core only (docs/architecture.md)';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.driftless/', '.serverless/', '.esbuild/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  ...Object.entries(FORBIDDEN).map(([folder, forbidden]) => dependencyRules(folder, forbidden)),
  {
    // Lambda entry points are thin adapters over src/aws (and the core): never the CLI or serve,
    // loaded at once or lazily.
    files: ['handlers/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: HANDLERS_FORBIDDEN, message: HANDLERS_RULE }] },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: `ImportExpression[source.value=/${HANDLERS_FORBIDDEN.replaceAll('/', '\\/')}/]`,
          message: HANDLERS_RULE,
        },
      ],
    },
  },
  {
    // The dashboard's browser code: types from src/dashboard/types.ts and nothing else of src/
    // (its runtime would drag Node code into the page), and none of Node's modules or globals.
    files: ['web/**/*.ts'],
    rules: {
      // The core rule checks `import type` too; the TypeScript one can let it through.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+src/(?!dashboard/types\\.ts$)',
              message: 'web/ imports from src/ only the API types of src/dashboard/types.ts',
            },
          ],
        },
      ],
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+src/',
              allowTypeImports: true,
              message:
                'web/ imports src/dashboard/types.ts with `import type` only (no runtime code)',
            },
            { regex: '^node:', message: 'web/ runs in the browser: no Node modules' },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        ...['process', 'Buffer', 'require', '__dirname', '__filename'].map((name) => ({
          name,
          message: 'web/ runs in the browser',
        })),
      ],
    },
  },
);
