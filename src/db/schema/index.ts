/** All tables, one file per module. drizzle-kit reads this file to generate migrations. */
export * from './identity.js';
export * from './api-keys.js';
export * from './sessions.js';
