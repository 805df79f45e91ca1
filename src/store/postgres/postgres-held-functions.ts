/**
 * @module The PostgreSQL store's schema version 5 (issue 47): a step's log lives with its
 * step — the events written with the step's first commit in the step's own row (`log`), each
 * later commit's events of the step one row of `chunks` — and `write_held`, which writes the
 * rows a store held back in one call of `apply` (`postgres-held-rows.ts`): new runs and steps
 * as multi-row inserts, each with what happened to it before the commit already in it; later
 * changes as one update a record and one chunk a step.
 *
 * Why chunks beside the row rather than every event in it: an update of a row writes the
 * whole row again (PostgreSQL keeps versions), so a long log appended in the row at each
 * commit would cost its length at every commit; a chunk costs only its own events.
 */

/**
 * What schema version 5 changes in version 4's tables, in the schema `s` (a checked
 * identifier): the `log` column, the `chunks` table, each step's events moved there as one
 * chunk (keys kept in their order, `step_id` and `seq` dropped), the `events` table and
 * version 4's `apply` dropped.
 */
export function tables5(s: string): string {
  return `
    ALTER TABLE ${s}.steps ADD COLUMN log JSON;
    CREATE TABLE ${s}.chunks (step_id TEXT NOT NULL, last_seq INTEGER NOT NULL,
      first_seq INTEGER NOT NULL, events JSON NOT NULL, PRIMARY KEY (step_id, last_seq));
    INSERT INTO ${s}.chunks (step_id, last_seq, first_seq, events)
      SELECT step_id, max(seq), min(seq),
          json_agg((SELECT json_object_agg(k, v) FROM json_each(event) AS j(k, v)
            WHERE k NOT IN ('step_id', 'seq')) ORDER BY seq)
        FROM ${s}.events GROUP BY step_id;
    DROP TABLE ${s}.events;
    DROP FUNCTION IF EXISTS ${s}.apply(jsonb, text, boolean);`;
}

/**
 * `write_held(w json)`, in the schema `s`. `w` holds, each list optional:
 * - `runs`: new runs, each its record (the columns read from it);
 * - `steps`: new steps, `{id, run, last, record, log?}` — `log` the events of its first
 *   commit, `last` the seq of the last of them;
 * - `step_updates`: steps written before, `{id, prev?, last?, events?, patch?, drop?}` — the
 *   log moved from `prev` to `last` (refused unless it is at `prev`), those events one chunk;
 *   the record patched (`drop`: fields removed first);
 * - `run_updates`: runs written before, `{id, patch?, usage?}` — the patch, then `usage` added
 *   to `budget_usage` (a commit's steps' use, summed);
 * - `released`: `[run_id, step_id]` of ended steps whose budget reservations go.
 *
 * The store checked all of it against what it knows before holding it back; a row that fails
 * here anyway (an id another process took, a log another process moved) fails the whole call
 * with SQLSTATE `AX409` (or `AX404` for a record gone) or the server's own error, and the
 * batcher reports it (see `postgres-batch.ts`).
 */
export function heldFunctions(s: string): string {
  return `
    CREATE OR REPLACE FUNCTION ${s}.write_held(w json) RETURNS void LANGUAGE plpgsql AS $f$
    DECLARE u json;
    BEGIN
      INSERT INTO ${s}.runs (run_id, status, user_id, entry, record)
        SELECT r->>'run_id', r->>'status', r->>'user_id', r->>'entry', r::jsonb
          FROM json_array_elements(w->'runs') r;
      INSERT INTO ${s}.steps (step_id, run_id, client_token, last_seq, record, log)
        SELECT x->>'id', x->>'run', x->'record'->>'client_token', (x->>'last')::int,
            (x->'record')::jsonb, x->'log'
          FROM json_array_elements(w->'steps') x;
      -- One record at a time, by its key (a join would let the planner scan every step).
      FOR u IN SELECT json_array_elements(w->'step_updates') LOOP
        UPDATE ${s}.steps SET last_seq = coalesce((u->>'last')::int, last_seq),
            record = CASE WHEN u->'patch' IS NULL THEN record
              ELSE (record - ARRAY(SELECT json_array_elements_text(coalesce(u->'drop', '[]'))))
                || (u->'patch')::jsonb END
          WHERE step_id = u->>'id' AND (u->'prev' IS NULL OR last_seq = (u->>'prev')::int);
        IF NOT FOUND THEN
          RAISE EXCEPTION USING ERRCODE = 'AX409',
            MESSAGE = format('step %s: its log is not at seq %s, where this store left it',
              u->>'id', u->>'prev');
        END IF;
        IF u->'events' IS NOT NULL THEN
          INSERT INTO ${s}.chunks (step_id, last_seq, first_seq, events)
            VALUES (u->>'id', (u->>'last')::int, (u->>'prev')::int + 1, u->'events');
        END IF;
      END LOOP;
      FOR u IN SELECT json_array_elements(w->'run_updates') LOOP
        UPDATE ${s}.runs SET
            status = coalesce(u->'patch'->>'status', status),
            record = ${s}.held_run(record, (u->'patch')::jsonb, (u->'usage')::jsonb)
          WHERE run_id = u->>'id';
        IF NOT FOUND THEN
          RAISE EXCEPTION USING ERRCODE = 'AX404', MESSAGE = format('run %s not found', u->>'id');
        END IF;
      END LOOP;
      DELETE FROM ${s}.holds h USING json_array_elements(w->'released') x
        WHERE h.run_id = x->>0 AND h.step_id = x->>1;
    END $f$;

    -- A run's record with a patch, then a usage added.
    CREATE OR REPLACE FUNCTION ${s}.held_run(r jsonb, patch jsonb, usage jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $f$
      SELECT CASE WHEN usage IS NULL THEN p
        ELSE jsonb_set(p, '{budget_usage}', ${s}.add_usage(p->'budget_usage', usage)) END
      FROM (SELECT CASE WHEN patch IS NULL THEN r ELSE r || patch END AS p) x $f$;`;
}
