/**
 * Records as the API serves them, declared once for the server, the API client, the web UI and the public
 * TypeScript API (the web UI imports this folder alone of the runtime: nothing here reaches Node).
 */

export * from './callbacks.js';
export * from './events.js';
export * from './operations.js';
export * from './records.js';
export * from './schedules.js';
export * from './streams.js';
export * from './users.js';
