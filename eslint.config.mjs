// Lint: floating promises are errors everywhere; workflow code may not import Node builtins or
// anything that does I/O (Temporal replays workflows, so they must be deterministic).
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];
const ioPackages = [
  'kafkajs',
  '@aws-sdk/*',
  'pg',
  'parquet-wasm',
  'apache-arrow',
  '@temporalio/client',
  '@temporalio/worker',
  '@temporalio/activity',
  '../activities',
  '../activities/*',
  '../iceberg',
  '../iceberg/*',
  '../stack',
  '../stack/*',
  '../ingest',
  '../ingest/*',
  '../table',
  '../table/*',
];

// iceberg/ is a library with one public entry, iceberg/index.ts: other folders import '../iceberg',
// types too (`import type` costs nothing at run time), never a file inside it. iceberg's own files
// import each other by relative path, never through the entry (that would be an import cycle).
const icebergEntryOnly = {
  regex: '^(\\.\\./)+iceberg/',
  message: "import iceberg through its public entry ('../iceberg'), not a file inside it",
};

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', '.floe/**', '.tmp-*', 'eslint.config.mjs'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's describe/it/test return promises the runner itself awaits.
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['test', 'it', 'describe', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
            },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    // Very long functions hide state and steps; a warning (not an error) so a reviewer weighs each one.
    files: ['**/*.ts'],
    ignores: ['test/**', 'bench/**', 'scripts/**'],
    rules: { 'max-lines-per-function': ['warn', { max: 100, skipBlankLines: true, skipComments: true, IIFEs: true }] },
  },
  {
    files: ['**/*.ts'],
    ignores: ['iceberg/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [icebergEntryOnly] }] },
  },
  {
    // These test and measure iceberg internals that are not part of its public API (the flat
    // Parquet encoder, the streaming writer, the wire format, the raw parquet-wasm module).
    files: ['test/unit/parquet-flat.test.ts', 'test/unit/parquet-stream.test.ts', 'bench/parquet-write.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'workflow code must be deterministic: no Node builtins' })),
          patterns: [
            icebergEntryOnly,
            {
              group: ioPackages,
              allowTypeImports: true,
              message: 'workflows import activity *types* only; side effects live in activities',
            },
          ],
        },
      ],
      'no-restricted-globals': ['error', { name: 'setTimeout', message: 'use sleep() from @temporalio/workflow' }],
      'no-restricted-properties': ['error', { object: 'Math', property: 'random', message: 'use uuid4() / the SDK-seeded random' }],
    },
  },
);
