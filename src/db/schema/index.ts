/** All tables, one file per module. drizzle-kit reads this file to generate migrations. */
export * from './identity.js';
export * from './api-keys.js';
export * from './sessions.js';
export * from './subscriptions.js';
export * from './agents.js';
export * from './agent-memory.js';
export * from './permissions.js';
export * from './memory.js';
export * from './registry.js';
export * from './publishing.js';
export * from './deployments.js';
export * from './analytics.js';
export * from './mcp.js';
export * from './connections.js';
export * from './search.js';
export * from './schedules.js';
export * from './triggers.js';
