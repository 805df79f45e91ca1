/**
 * @module Updates of the SQLite store's written rows (schema 5, `sqlite-rows.ts`): a run's
 * `status` column, and every changing field at its place in the row's record array, set with
 * `json_set` (each value bound as JSON text). A held row is updated in memory instead
 * (`sqlite-pending.ts`); both go by the table's `RowLayout`. One statement per table and
 * set of fields, prepared when first needed.
 */
import type Database from 'better-sqlite3';
import { fieldJson, splitPatch, type RowLayout, type SplitPatch } from './sqlite-rows.js';

/** The UPDATE of a written row that sets what `split` sets. */
function patchSql(layout: RowLayout, split: SplitPatch): string {
  const sets = split.columns.map(([name]) => `${name} = ?`);
  if (split.fields.length > 0) {
    const paths = split.fields.map(([at]) => `'$[${layout.fixed + at}]', json(?)`);
    sets.push(`record = json_set(record, ${paths.join(', ')})`);
  }
  return `UPDATE ${layout.table} SET ${sets.join(', ')} WHERE ${layout.id} = ?`;
}

/** The updates of a table's written rows. */
export class RowPatches {
  readonly #db: Database.Database;
  readonly #layout: RowLayout;
  /** Whether a row exists, by id (the store's own statement): an empty patch's answer. */
  readonly #exists: Database.Statement;
  /** UPDATE statements by patched columns and fields. */
  readonly #statements = new Map<string, Database.Statement>();

  constructor(db: Database.Database, layout: RowLayout, exists: Database.Statement) {
    this.#db = db;
    this.#layout = layout;
    this.#exists = exists;
  }

  /**
   * Sets the patch's defined fields of the row `id`; false when there is no such row. A
   * field an update cannot set is a `TypeError`.
   */
  apply(id: string, patch: object): boolean {
    const split = splitPatch(this.#layout, patch);
    if (split.columns.length === 0 && split.fields.length === 0) {
      return this.#exists.get(id) !== undefined;
    }
    const key = [...split.columns.map(([n]) => n), ...split.fields.map(([, n]) => n)].join(',');
    let statement = this.#statements.get(key);
    if (!statement) {
      statement = this.#db.prepare(patchSql(this.#layout, split));
      this.#statements.set(key, statement);
    }
    // By position: the columns, then the record's fields, then the id.
    const values: unknown[] = split.columns.map(([, value]) => value);
    for (const [, name, value] of split.fields) values.push(fieldJson(name, value));
    values.push(id);
    return statement.run(...values).changes > 0;
  }
}
