/**
 * @module The PostgreSQL store's durable agents in SQL (schema version 4; issue 46): the
 * tables of actors, their mailboxes, wakes and schedules, each read through an index, and the
 * functions that write them as operations of a batch (`<schema>.apply`, `postgres-batch.ts`).
 *
 * What must be atomic is one function, so one transaction: an acceptance locks its actor's
 * row, then checks the client token and the mailbox's bound and claims the step; a firing is
 * an update conditional on the wake still pending (of two, the second finds it fired); a
 * message's end (`end_message`) is the step's end (`end_run` or `end_step`) with its actor's
 * state, mailbox and wakes, all checked before anything is written.
 */

/** The tables and indexes of schema version 4, in the schema `s` (a checked identifier). */
export function actorTables(s: string): string {
  return `
    -- An actor: its queried fields as columns, its state as JSON. COLLATE "C": ids are listed
    -- in code-point order (actorsWith pages by id), keys matched by prefix on their index.
    CREATE TABLE ${s}.actors (seq BIGSERIAL UNIQUE, actor_id TEXT COLLATE "C" PRIMARY KEY,
      user_id TEXT, name TEXT NOT NULL, key TEXT COLLATE "C" NOT NULL, run_id TEXT NOT NULL,
      version INTEGER NOT NULL, state JSONB NOT NULL, status TEXT NOT NULL,
      created_at TEXT NOT NULL, updated_at TEXT NOT NULL) WITH (fillfactor = 70);
    CREATE INDEX actors_by_user ON ${s}.actors (user_id, seq);
    CREATE INDEX actors_by_name ON ${s}.actors (name, seq);
    CREATE INDEX actors_by_key ON ${s}.actors (key);
    CREATE INDEX actors_open ON ${s}.actors (status, actor_id) WHERE status <> 'idle';
    -- An actor's messages not ended (steps of its run), in the order accepted (seq), queued
    -- until taken.
    CREATE TABLE ${s}.mailbox (actor_id TEXT NOT NULL, step_id TEXT NOT NULL,
      seq BIGSERIAL NOT NULL, queued BOOLEAN NOT NULL, PRIMARY KEY (actor_id, step_id));
    CREATE INDEX mailbox_order ON ${s}.mailbox (actor_id, queued, seq);
    -- Wakes and schedules: the record as JSON beside the columns their indexes need. Times
    -- are ms since the epoch.
    CREATE TABLE ${s}.wakes (wake_id TEXT PRIMARY KEY, actor_id TEXT NOT NULL, user_id TEXT,
      kind TEXT NOT NULL, step_id TEXT, status TEXT NOT NULL, due_at FLOAT8, event TEXT,
      fired_at FLOAT8, created FLOAT8 NOT NULL, record JSONB NOT NULL);
    CREATE INDEX wakes_due ON ${s}.wakes (due_at) WHERE status = 'pending' AND due_at IS NOT NULL;
    CREATE INDEX wakes_by_event ON ${s}.wakes (event, user_id, created)
      WHERE status = 'pending' AND event IS NOT NULL;
    CREATE INDEX wakes_fired ON ${s}.wakes (fired_at) WHERE status = 'fired' AND kind <> 'reminder';
    CREATE INDEX wakes_by_actor ON ${s}.wakes (actor_id);
    CREATE INDEX wakes_by_step ON ${s}.wakes (step_id) WHERE step_id IS NOT NULL;
    CREATE TABLE ${s}.schedules (seq BIGSERIAL UNIQUE, schedule_id TEXT PRIMARY KEY,
      user_id TEXT, status TEXT NOT NULL, next_at FLOAT8, record JSONB NOT NULL);
    CREATE INDEX schedules_due ON ${s}.schedules (next_at)
      WHERE status = 'active' AND next_at IS NOT NULL;
    CREATE INDEX schedules_by_user ON ${s}.schedules (user_id, seq);`;
}

/**
 * The actors' functions, in the schema `s`: replaced whole by each migration that changes
 * one, as `writeFunctions`. `apply` names each (`postgres-functions.ts`).
 */
export function actorFunctions(s: string): string {
  return `
    -- An actor's record: its row but the order column.
    CREATE OR REPLACE FUNCTION ${s}.actor_json(id text) RETURNS jsonb LANGUAGE sql STABLE AS
      $f$ SELECT to_jsonb(a) - 'seq' FROM ${s}.actors a WHERE a.actor_id = actor_json.id $f$;

    -- The actor, or, when there is none, the actor created with its run. The insert is the
    -- race: of two, the second waits for the first's commit and finds its row.
    CREATE OR REPLACE FUNCTION ${s}.open_actor(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE act jsonb := a->'actor'; r jsonb;
    BEGIN
      INSERT INTO ${s}.actors (actor_id, user_id, name, key, run_id, version, state, status,
          created_at, updated_at)
        VALUES (act->>'actor_id', act->>'user_id', act->>'name', act->>'key', act->>'run_id',
          (act->>'version')::int, act->'state', act->>'status', act->>'created_at',
          act->>'updated_at')
        ON CONFLICT (actor_id) DO NOTHING;
      IF NOT FOUND THEN
        RETURN jsonb_build_object('ok', jsonb_build_object(
          'actor', ${s}.actor_json(act->>'actor_id'), 'created', false));
      END IF;
      r := ${s}.create_run(jsonb_build_object('run', a->'run'));
      IF r ? 'err' THEN
        -- The run's id is taken: the actor goes too, nothing is written.
        DELETE FROM ${s}.actors WHERE actor_id = act->>'actor_id';
        RETURN r;
      END IF;
      RETURN jsonb_build_object('ok', jsonb_build_object(
        'actor', ${s}.actor_json(act->>'actor_id'), 'created', true));
    END $f$;

    CREATE OR REPLACE FUNCTION ${s}.get_actor(a jsonb) RETURNS jsonb LANGUAGE sql STABLE AS
      $f$ SELECT jsonb_build_object('ok', ${s}.actor_json(a->>'id')) $f$;

    -- A message to an actor, under its row's lock (acceptances of one actor one at a time): a
    -- client token seen before answers with its step; a full mailbox refuses; else the step
    -- is claimed, queued, and an idle actor becomes live.
    CREATE OR REPLACE FUNCTION ${s}.accept_message(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE step jsonb := a->'step'; act record; hit jsonb; depth bigint; r jsonb;
    BEGIN
      SELECT name, key INTO act FROM ${s}.actors WHERE actor_id = a->>'id' FOR UPDATE;
      IF NOT FOUND THEN RETURN ${s}.not_found('actor', a->>'id'); END IF;
      IF step->>'client_token' IS NOT NULL THEN
        SELECT record INTO hit FROM ${s}.steps
          WHERE run_id = step->>'run_id' AND client_token = step->>'client_token';
        IF FOUND THEN RETURN jsonb_build_object('ok', jsonb_build_object('step', hit)); END IF;
      END IF;
      SELECT count(*) INTO depth FROM ${s}.mailbox WHERE actor_id = a->>'id' AND queued;
      IF depth >= (a->>'max_queue')::bigint THEN
        RETURN jsonb_build_object('err', 'queue_full', 'name', act.name, 'key', act.key,
          'max_queue', a->'max_queue');
      END IF;
      r := ${s}.create_step(jsonb_build_object('step', step, 'claim', true));
      IF r ? 'err' OR r->'ok' ? 'step' THEN RETURN r; END IF;
      INSERT INTO ${s}.mailbox (actor_id, step_id, queued) VALUES (a->>'id', step->>'step_id', true);
      UPDATE ${s}.actors SET status = 'live' WHERE actor_id = a->>'id' AND status = 'idle';
      RETURN r;
    END $f$;

    CREATE OR REPLACE FUNCTION ${s}.take_message(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    BEGIN
      UPDATE ${s}.mailbox SET queued = false
        WHERE actor_id = a->>'actor_id' AND step_id = a->>'id' AND queued;
      RETURN '{"ok": null}';
    END $f$;

    CREATE OR REPLACE FUNCTION ${s}.set_actor_status(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    BEGIN
      UPDATE ${s}.actors SET status = a->>'status', updated_at = a->>'updated_at'
        WHERE actor_id = a->>'id';
      IF NOT FOUND THEN RETURN ${s}.not_found('actor', a->>'id'); END IF;
      RETURN '{"ok": null}';
    END $f$;

    -- A message's end: the step's (by "via": end_run or end_step, which check before they
    -- write) with its actor's, whose row is locked and checked first. Then the message and the
    -- ones merged into it leave the mailbox, their wakes go, the merged ones are ended, and the
    -- actor takes its new state; it stays live while messages are queued.
    CREATE OR REPLACE FUNCTION ${s}.end_message(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE w jsonb := a->'actor'; aid text := a->'actor'->>'actor_id'; r jsonb; m jsonb;
      ids text[];
    BEGIN
      PERFORM 1 FROM ${s}.actors WHERE actor_id = aid FOR UPDATE;
      IF NOT FOUND THEN RETURN ${s}.not_found('actor', aid); END IF;
      IF a->>'via' = 'end_run' THEN r := ${s}.end_run(a); ELSE r := ${s}.end_step(a); END IF;
      IF r ? 'err' THEN RETURN r; END IF;
      ids := ARRAY[a->>'id'] || ARRAY(SELECT e->>'id' FROM jsonb_array_elements(w->'merged') e);
      DELETE FROM ${s}.mailbox WHERE actor_id = aid AND step_id = ANY(ids);
      DELETE FROM ${s}.wakes WHERE step_id = ANY(ids);
      FOR m IN SELECT jsonb_array_elements(w->'merged') LOOP
        PERFORM ${s}.update_step(m);
      END LOOP;
      UPDATE ${s}.actors SET
          state = coalesce(w->'state'->'value', state),
          version = coalesce((w->'state'->>'version')::int, version),
          updated_at = w->>'updated_at',
          status = CASE WHEN EXISTS (SELECT 1 FROM ${s}.mailbox WHERE actor_id = aid AND queued)
            THEN 'live' ELSE 'idle' END
        WHERE actor_id = aid;
      RETURN r;
    END $f$;

    -- A wake, or the one stored under its id (then nothing is written).
    CREATE OR REPLACE FUNCTION ${s}.put_wake(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE w jsonb := a->'wake'; hit jsonb;
    BEGIN
      INSERT INTO ${s}.wakes (wake_id, actor_id, user_id, kind, step_id, status, due_at, event,
          fired_at, created, record)
        VALUES (w->>'wake_id', w->>'actor_id', w->>'user_id', w->>'kind', w->>'step_id',
          w->>'status', (w->>'due_at')::float8, w->>'event', (w->>'fired_at')::float8,
          (w->>'created_at')::float8, w)
        ON CONFLICT (wake_id) DO NOTHING;
      IF FOUND THEN RETURN jsonb_build_object('ok', jsonb_build_object('wake', w, 'created', true)); END IF;
      SELECT record INTO hit FROM ${s}.wakes WHERE wake_id = w->>'wake_id';
      RETURN jsonb_build_object('ok', jsonb_build_object('wake', hit, 'created', false));
    END $f$;

    CREATE OR REPLACE FUNCTION ${s}.get_wake(a jsonb) RETURNS jsonb LANGUAGE sql STABLE AS $f$
      SELECT jsonb_build_object('ok', (SELECT record FROM ${s}.wakes WHERE wake_id = a->>'id')) $f$;

    -- Fires a pending wake: the update is conditional on "pending", so of two firings the
    -- second waits for the first's row lock, then finds it fired and answers null.
    CREATE OR REPLACE FUNCTION ${s}.fire_wake(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE hit jsonb;
    BEGIN
      UPDATE ${s}.wakes SET status = 'fired', fired_at = (a->>'fired_at')::float8,
          record = record || jsonb_build_object('status', 'fired', 'data', a->'data',
            'fired_at', a->'fired_at', 'timed_out', a->'timed_out')
        WHERE wake_id = a->>'id' AND status = 'pending' RETURNING record INTO hit;
      RETURN jsonb_build_object('ok', hit);
    END $f$;

    CREATE OR REPLACE FUNCTION ${s}.rearm_wake(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    BEGIN
      UPDATE ${s}.wakes SET status = 'pending', due_at = (a->>'due_at')::float8, fired_at = NULL,
          record = record || jsonb_build_object('status', 'pending', 'due_at', a->'due_at',
            'fired_at', NULL)
        WHERE wake_id = a->>'id';
      RETURN '{"ok": null}';
    END $f$;

    CREATE OR REPLACE FUNCTION ${s}.delete_wakes(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    BEGIN
      DELETE FROM ${s}.wakes WHERE wake_id = ANY(ARRAY(SELECT jsonb_array_elements_text(a->'ids')));
      RETURN '{"ok": null}';
    END $f$;

    -- A schedule, or the one stored under its id (then nothing is written).
    CREATE OR REPLACE FUNCTION ${s}.put_schedule(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE x jsonb := a->'schedule'; hit jsonb;
    BEGIN
      INSERT INTO ${s}.schedules (schedule_id, user_id, status, next_at, record)
        VALUES (x->>'schedule_id', x->>'user_id', x->>'status', (x->>'next_at')::float8, x)
        ON CONFLICT (schedule_id) DO NOTHING;
      IF FOUND THEN RETURN jsonb_build_object('ok', jsonb_build_object('schedule', x, 'created', true)); END IF;
      SELECT record INTO hit FROM ${s}.schedules WHERE schedule_id = x->>'schedule_id';
      RETURN jsonb_build_object('ok', jsonb_build_object('schedule', hit, 'created', false));
    END $f$;

    CREATE OR REPLACE FUNCTION ${s}.get_schedule(a jsonb) RETURNS jsonb LANGUAGE sql STABLE AS $f$
      SELECT jsonb_build_object('ok',
        (SELECT record FROM ${s}.schedules WHERE schedule_id = a->>'id')) $f$;

    -- Merges a patch of status, next_at and updated_at into a schedule and its columns.
    CREATE OR REPLACE FUNCTION ${s}.update_schedule(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE p jsonb := a->'patch';
    BEGIN
      UPDATE ${s}.schedules SET record = record || p,
          status = coalesce(p->>'status', status),
          next_at = CASE WHEN p ? 'next_at' THEN (p->>'next_at')::float8 ELSE next_at END
        WHERE schedule_id = a->>'id';
      IF NOT FOUND THEN RETURN ${s}.not_found('schedule', a->>'id'); END IF;
      RETURN '{"ok": null}';
    END $f$;

    CREATE OR REPLACE FUNCTION ${s}.delete_schedule(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    BEGIN
      DELETE FROM ${s}.schedules WHERE schedule_id = a->>'id';
      RETURN jsonb_build_object('ok', FOUND);
    END $f$;`;
}

/** The batch operations of {@link actorFunctions}, each a function of the same name. */
export const ACTOR_OPS: readonly string[] = [
  'open_actor',
  'get_actor',
  'accept_message',
  'take_message',
  'set_actor_status',
  'end_message',
  'put_wake',
  'get_wake',
  'fire_wake',
  'rearm_wake',
  'delete_wakes',
  'put_schedule',
  'get_schedule',
  'update_schedule',
  'delete_schedule',
];
