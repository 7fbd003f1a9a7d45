// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';

/** What lies above config and core, relative to a file directly in src/<folder>/. */
const UPPER_LAYERS = [
  '../models',
  '../models/*',
  '../eval/*',
  '../sandbox/*',
  '../activities',
  '../activities/*',
  '../workflows',
  '../workflows/*',
  '../workers/*',
  '../cli/*',
  '../client/*',
  '../temporal/*',
  '../docker/*',
  '../logs/*',
  '../sim/*',
];

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      '.tools/**',
      '.steward/**',
      'logs/**',
      'coverage/**',
      // Code that breaks the rules on purpose, linted by test/lint.test.ts.
      'test/fixtures/lint/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: {
      // Without these, import-x neither resolves nor parses a .ts dependency, and
      // import-x/no-cycle silently checks nothing (test/lint.test.ts proves that it fires).
      'import-x/extensions': ['.ts', '.tsx', '.js', '.mjs', '.cjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx'] },
      'import-x/resolver-next': [
        createNodeResolver({
          extensions: ['.ts', '.tsx', '.mjs', '.cjs', '.js', '.json', '.node'],
          extensionAlias: { '.js': ['.ts', '.js'] },
        }),
      ],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'import-x/no-cycle': 'error',
      // src/temporal/open-connection.ts says why: a bare connection can crash its process on close.
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "CallExpression[callee.object.name='Connection'][callee.property.name=/^(connect|lazy)$/]",
          message: 'Open Temporal connections with openConnection (src/temporal/open-connection).',
        },
      ],
      // Workflow query handlers are registered first and read state assigned later.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no I/O, no Node built-ins, and only
    // types from activities (the calls go through proxyActivities).
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                'node:*',
                'fs',
                'path',
                'os',
                'child_process',
                'http',
                'https',
                'net',
                'crypto',
              ],
              message: 'Workflows must stay deterministic: do I/O in activities.',
            },
            {
              group: [
                'dockerode',
                'openai',
                'yaml',
                'csv-parse',
                '@temporalio/client',
                '@temporalio/worker',
              ],
              message: 'Workflows must stay deterministic: do I/O in activities.',
            },
            {
              group: ['../activities', '../activities/*'],
              allowTypeImports: true,
              message: 'Import activities as types only; call them through proxyActivities.',
            },
          ],
        },
      ],
    },
  },
  {
    // Layers: config and core are below everything else, so nothing they import may pull in a
    // provider's SDK, Docker, Temporal's worker, or the code that runs samples. Types may cross.
    files: ['src/config/**/*.ts', 'src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: UPPER_LAYERS,
              allowTypeImports: true,
              message: 'config and core sit below this layer: move what both need down.',
            },
            {
              group: ['openai', 'dockerode', '@temporalio/*', 'tsx', 'tsx/*'],
              message: 'config and core sit below this layer: move what both need down.',
            },
          ],
        },
      ],
    },
  },
  {
    // Pure policy: not even a type from the layers that use it.
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [...UPPER_LAYERS, '../definition', '../definition/*', '../config/load'],
              message: 'core is pure policy: it must not depend on the layers that use it.',
            },
          ],
        },
      ],
    },
  },
  {
    // The definition's model (its types, datasets, sample indices, task identity) sits below the
    // code that runs it: reading a definition file and building its solvers and scorers is
    // src/loader's. The package entry (index.ts) re-exports the built-ins on purpose.
    files: ['src/definition/**/*.ts'],
    ignores: ['src/definition/index.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [...UPPER_LAYERS, '../loader/*'],
              allowTypeImports: true,
              message: 'definition sits below the code that runs it: load and build in src/loader.',
            },
          ],
        },
      ],
    },
  },
  {
    // Workflow code imports these: zod and pure modules only, no I/O.
    files: [
      'src/config/knobs.ts',
      'src/config/settings.ts',
      'src/config/issues.ts',
      'src/config/notify.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!zod$|\\./(knobs|issues|notify)$|\\.\\./errors$)',
              message: 'Workflow code imports this module: zod and pure modules only.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: {
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        __dirname: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
