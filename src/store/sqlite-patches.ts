/**
 * @module Updates of the SQLite store's written rows (schema 5, `sqlite-rows.ts`): a run's
 * `status` column, and every other field at its place in the row's record array, set with
 * `json_set` (each value bound as JSON text). A held row is updated in memory instead
 * (`sqlite-pending.ts`). One statement per table and set of fields, prepared when first
 * needed.
 */
import type Database from 'better-sqlite3';
import { fieldJson, RUN_FIELD_AT, STEP_FIELD_AT } from './sqlite-rows.js';

/** The tables whose rows an update may change. */
export type PatchedTable = 'runs' | 'steps';

/** The UPDATE of a written run or step that sets `keys`. */
function patchSql(table: PatchedTable, keys: readonly string[]): string {
  const at = table === 'runs' ? RUN_FIELD_AT : STEP_FIELD_AT;
  const paths: string[] = [];
  for (const k of keys) {
    if (table === 'runs' && k === 'status') continue;
    const i = at.get(k);
    if (i === undefined) throw new TypeError(`no field ${k} to patch`);
    paths.push(`'$[${i}]', json(?)`);
  }
  const sets: string[] = [];
  if (table === 'runs' && keys.includes('status')) sets.push('status = ?');
  if (paths.length > 0) sets.push(`record = json_set(record, ${paths.join(', ')})`);
  const id = table === 'runs' ? 'run_id' : 'step_id';
  return `UPDATE ${table} SET ${sets.join(', ')} WHERE ${id} = ?`;
}

/** The updates of written runs and steps. */
export class RowPatches {
  readonly #db: Database.Database;
  readonly #exists: Readonly<Record<PatchedTable, Database.Statement>>;
  /** UPDATE statements by table and patched fields. */
  readonly #statements = new Map<string, Database.Statement>();

  constructor(db: Database.Database) {
    this.#db = db;
    this.#exists = {
      runs: db.prepare('SELECT 1 FROM runs WHERE run_id = ?'),
      steps: db.prepare('SELECT 1 FROM steps WHERE step_id = ?'),
    };
  }

  /** Sets the patch's defined fields of the row `id`; false when there is no such row. */
  apply(table: PatchedTable, id: string, patch: object): boolean {
    const fields = patch as Record<string, unknown>;
    const keys = Object.keys(fields).filter((k) => fields[k] !== undefined);
    if (keys.length === 0) return this.#exists[table].get(id) !== undefined;
    const key = `${table}:${keys.join(',')}`;
    let statement = this.#statements.get(key);
    if (!statement) {
      statement = this.#db.prepare(patchSql(table, keys));
      this.#statements.set(key, statement);
    }
    // By position: the column first (a run's status), then the record's fields, then the id.
    const values: unknown[] = [];
    if (table === 'runs' && keys.includes('status')) values.push(fields['status']);
    for (const k of keys) {
      if (table !== 'runs' || k !== 'status') values.push(fieldJson(k, fields[k]));
    }
    values.push(id);
    return statement.run(...values).changes > 0;
  }
}
