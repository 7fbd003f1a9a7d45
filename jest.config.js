/** @type {import('jest').Config} */
module.exports = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // One Temporal dev server for the whole run; its address reaches tests as TEMPORAL_ADDRESS.
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  // Integration tests share one dev server and a 2-core machine: run files one at a time.
  maxWorkers: 1,
  testTimeout: 600_000,
};
