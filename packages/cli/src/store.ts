/**
 * Where `agent-platform login` keeps the user's tokens: `$XDG_CONFIG_HOME/agent-platform/credentials.json`
 * (default `~/.config`, XDG Base Directory Specification), mode 0600 in a 0700 directory, one entry
 * per API URL. Written atomically (temp file + rename) so a refresh never leaves half a file.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TokenSet, TokenStorage } from '@agent-platform/sdk';

/** The configuration directory (`$XDG_CONFIG_HOME/agent-platform`). */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME)
      ? env.XDG_CONFIG_HOME
      : path.join(os.homedir(), '.config');
  return path.join(base, 'agent-platform');
}

type FileShape = { version: 1; servers: Record<string, TokenSet & { email?: string }> };

/** The credentials file; tokens of each API URL under its own key. */
export class CredentialsFile {
  readonly file: string;
  constructor(dir = configDir()) {
    this.file = path.join(dir, 'credentials.json');
  }

  private read(): FileShape {
    try {
      const parsed = JSON.parse(fs.readFileSync(this.file, 'utf8')) as FileShape;
      return parsed && typeof parsed.servers === 'object' ? parsed : { version: 1, servers: {} };
    } catch {
      return { version: 1, servers: {} };
    }
  }

  private write(data: FileShape): void {
    const dir = path.dirname(this.file);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
    fs.renameSync(tmp, this.file);
  }

  get(server: string): (TokenSet & { email?: string }) | null {
    return this.read().servers[server] ?? null;
  }

  set(server: string, tokens: (TokenSet & { email?: string }) | null): void {
    const data = this.read();
    if (tokens) data.servers[server] = { ...data.servers[server], ...tokens };
    else delete data.servers[server];
    this.write(data);
  }

  /** A {@link TokenStorage} over this file for `server`, so the SDK's refreshes persist. */
  storage(server: string): TokenStorage {
    return { get: () => this.get(server), set: (t) => this.set(server, t) };
  }
}
