/** Opening a platform database outside an app, for storage tests. */
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/client.js';

/**
 * Open the database that `env` configures (NODE_ENV=test added), hand its handle to `use`, and
 * close it again whatever `use` does. @returns what `use` returned
 */
export async function withDatabase<T>(env: Record<string, string>, use: (db: Db) => Promise<T>): Promise<T> {
  const database = await openDatabase(loadConfig({ NODE_ENV: 'test', ...env }));
  try {
    return await use(database.db);
  } finally {
    await database.close();
  }
}
