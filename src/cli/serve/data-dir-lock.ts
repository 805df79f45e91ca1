/**
 * @module The mark a running `axon serve` leaves in the SQLite data dir it serves
 * (`server.json`: its pid and URL), so that a command which would write that store from a
 * second process — `axon workflow trigger` without `--url`, which also picks up the threads
 * a stopped process left — can tell that a server holds it and send the user through the
 * server instead. A mark whose process is gone (a server killed with SIGKILL) counts for
 * nothing.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../../placement/container/container-orphans.js';
import { SERVER_LOCK_FILE } from '../cli-defaults.js';

/** What `server.json` holds. */
export interface ServerMark {
  readonly pid: number;
  /** The server's base URL, `http://127.0.0.1:7070`. */
  readonly url: string;
  readonly started_at: string;
}

/** Marks `dir` as served at `url` by this process; the returned function removes the mark. */
export function markDataDir(dir: string, url: string): () => void {
  const path = join(dir, SERVER_LOCK_FILE);
  const mark: ServerMark = { pid: process.pid, url, started_at: new Date().toISOString() };
  writeFileSync(path, `${JSON.stringify(mark)}\n`);
  return () => {
    // Only its own: a server started on the same dir since has written its mark.
    if (serverOn(dir)?.pid === process.pid) rmSync(path, { force: true });
  };
}

/** The server that serves `dir` now, or `null` (no mark, an unreadable one, a dead process). */
export function serverOn(dir: string): ServerMark | null {
  let mark: Partial<ServerMark>;
  try {
    mark = JSON.parse(readFileSync(join(dir, SERVER_LOCK_FILE), 'utf8')) as Partial<ServerMark>;
  } catch {
    return null;
  }
  const { pid, url, started_at } = mark;
  if (typeof pid !== 'number' || typeof url !== 'string' || !processAlive(pid)) return null;
  return { pid, url, started_at: started_at ?? '' };
}
