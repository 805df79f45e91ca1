/**
 * @module The PostgreSQL store's write path as SQL functions (schema version 3): a batch of
 * operations — the runs and steps writes a runtime makes on every step, and their reads — is
 * one call of `<schema>.apply(ops jsonb)`, so one round trip and one transaction (one commit)
 * for every operation of a turn of the event loop, of every run (`postgres-batch.ts`).
 *
 * Each operation checks before it writes (an unknown id, a `seq` that does not continue its
 * log, an id taken) and answers `{"ok": value}` or `{"err": …}` without writing, so one
 * refused operation leaves the others of its batch to commit. An operation that fails any
 * other way (a deadlock with another process, a broken connection) fails its batch; the
 * batcher then runs each of its operations alone.
 */

/** What schema version 2 changed in the tables of version 1, in the schema `s`. */
export function tables2(s: string): string {
  return `
    ALTER TABLE ${s}.runs ALTER COLUMN record TYPE jsonb USING record::jsonb;
    ALTER TABLE ${s}.steps ALTER COLUMN record TYPE jsonb USING record::jsonb;
    -- Room on each page for a row's next version: a step's record is rewritten at its end and
    -- its log's last seq moves at each append; an update that fits beside the row touches no
    -- index (a HOT update).
    ALTER TABLE ${s}.steps SET (fillfactor = 70);
    ALTER TABLE ${s}.runs SET (fillfactor = 70);
    -- Leases (postgres-leases.ts): "until" in milliseconds of the server's clock.
    CREATE TABLE ${s}.leases (key TEXT PRIMARY KEY, owner TEXT NOT NULL, until BIGINT NOT NULL);`;
}

/**
 * The tables of schema version 3: a fleet's turns at its steps (the fences, `take_turn`) and
 * the runs' budget reservations (`reserve`, `settle`); and the store's identity, which every
 * process of a fleet compares (`PostgresRunStore.records`).
 */
export function tables3(s: string): string {
  return `
    CREATE TABLE ${s}.turns (step_id TEXT PRIMARY KEY, turn BIGINT NOT NULL, token TEXT NOT NULL);
    CREATE TABLE ${s}.holds (run_id TEXT NOT NULL, step_id TEXT NOT NULL, token TEXT NOT NULL,
      tokens_in FLOAT8 NOT NULL, tokens_out FLOAT8 NOT NULL, cost_usd FLOAT8 NOT NULL,
      PRIMARY KEY (run_id, step_id));
    INSERT INTO ${s}.meta (key, value) VALUES ('store_id', gen_random_uuid()::text)
      ON CONFLICT (key) DO NOTHING;
    -- Each batch's answers, under its id, written in its transaction: a batch whose answer a
    -- lost connection kept from its caller is answered from here, not run again.
    CREATE TABLE ${s}.batches (id TEXT PRIMARY KEY, answers JSONB NOT NULL,
      at TIMESTAMPTZ NOT NULL DEFAULT now());
    -- Version 2's apply took no batch id.
    DROP FUNCTION IF EXISTS ${s}.apply(jsonb);`;
}

/**
 * The functions, in the schema `s` (a checked identifier): replaced whole by each migration
 * that changes one (they are code, not data). `apply` also runs the operations `more`, each
 * a function of that name defined beside (durable agents': `postgres-actor-functions.ts`).
 */
export function writeFunctions(s: string, more: readonly string[] = []): string {
  return `
    CREATE OR REPLACE FUNCTION ${s}.not_found(kind text, id text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS
      $f$ SELECT jsonb_build_object('err', 'not_found', 'kind', kind, 'id', id) $f$;

    CREATE OR REPLACE FUNCTION ${s}.conflict(message text, details jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS
      $f$ SELECT jsonb_build_object('err', 'conflict', 'message', message, 'details', details) $f$;

    CREATE OR REPLACE FUNCTION ${s}.add_usage(a jsonb, b jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $f$
      SELECT jsonb_build_object(
        'tokens_in', (a->>'tokens_in')::float8 + (b->>'tokens_in')::float8,
        'tokens_out', (a->>'tokens_out')::float8 + (b->>'tokens_out')::float8,
        'cost_usd', (a->>'cost_usd')::float8 + (b->>'cost_usd')::float8,
        'wall_ms', (a->>'wall_ms')::float8 + (b->>'wall_ms')::float8) $f$;

    CREATE OR REPLACE FUNCTION ${s}.create_run(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE run jsonb := a->'run';
    BEGIN
      INSERT INTO ${s}.runs (run_id, status, user_id, entry, record)
        VALUES (run->>'run_id', run->>'status', run->>'user_id', run->>'entry', run)
        ON CONFLICT (run_id) DO NOTHING;
      IF NOT FOUND THEN
        RETURN ${s}.conflict(format('run %s exists', run->>'run_id'), NULL);
      END IF;
      RETURN '{"ok": null}';
    END $f$;

    CREATE OR REPLACE FUNCTION ${s}.update_run(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    BEGIN
      UPDATE ${s}.runs SET record = record || (a->'patch'),
          status = coalesce(a->'patch'->>'status', status)
        WHERE run_id = a->>'id';
      IF NOT FOUND THEN RETURN ${s}.not_found('run', a->>'id'); END IF;
      RETURN '{"ok": null}';
    END $f$;

    CREATE OR REPLACE FUNCTION ${s}.add_run_usage(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE total jsonb;
    BEGIN
      UPDATE ${s}.runs
        SET record = jsonb_set(record, '{budget_usage}', ${s}.add_usage(record->'budget_usage', a->'usage'))
        WHERE run_id = a->>'id' RETURNING record->'budget_usage' INTO total;
      IF NOT FOUND THEN RETURN ${s}.not_found('run', a->>'id'); END IF;
      -- A step's use entered its run's: its reservation leaves the run's holds.
      IF a ? 'step' THEN
        DELETE FROM ${s}.holds WHERE run_id = a->>'id' AND step_id = a->>'step';
      END IF;
      RETURN jsonb_build_object('ok', total);
    END $f$;

    -- Creates a step; with "claim", first finds the step of its run holding its client token.
    CREATE OR REPLACE FUNCTION ${s}.create_step(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE step jsonb := a->'step'; claim boolean := (a->>'claim')::boolean; hit jsonb;
    BEGIN
      IF claim AND step->>'client_token' IS NOT NULL THEN
        SELECT record INTO hit FROM ${s}.steps
          WHERE run_id = step->>'run_id' AND client_token = step->>'client_token';
        IF FOUND THEN RETURN jsonb_build_object('ok', jsonb_build_object('step', hit)); END IF;
      END IF;
      PERFORM 1 FROM ${s}.runs WHERE run_id = step->>'run_id';
      IF NOT FOUND THEN RETURN ${s}.not_found('run', step->>'run_id'); END IF;
      INSERT INTO ${s}.steps (step_id, run_id, client_token, record)
        VALUES (step->>'step_id', step->>'run_id', step->>'client_token', step)
        ON CONFLICT DO NOTHING;
      IF FOUND THEN RETURN '{"ok": {"created": true}}'; END IF;
      PERFORM 1 FROM ${s}.steps WHERE step_id = step->>'step_id';
      IF FOUND THEN RETURN ${s}.conflict(format('step %s exists', step->>'step_id'), NULL); END IF;
      IF claim THEN
        -- Another claim of the token committed first: its step.
        SELECT record INTO hit FROM ${s}.steps
          WHERE run_id = step->>'run_id' AND client_token = step->>'client_token';
        RETURN jsonb_build_object('ok', jsonb_build_object('step', hit));
      END IF;
      RETURN '{"ok": {"created": false}}';
    END $f$;

    CREATE OR REPLACE FUNCTION ${s}.update_step(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    BEGIN
      UPDATE ${s}.steps SET record = (record - ARRAY(SELECT jsonb_array_elements_text(a->'drop'))) || (a->'patch')
        WHERE step_id = a->>'id';
      IF NOT FOUND THEN RETURN ${s}.not_found('step', a->>'id'); END IF;
      RETURN '{"ok": null}';
    END $f$;

    CREATE OR REPLACE FUNCTION ${s}.release_token(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE hit jsonb;
    BEGIN
      UPDATE ${s}.steps SET client_token = NULL, record = record || '{"client_token": null}'
        WHERE step_id = a->>'id' RETURNING record INTO hit;
      IF NOT FOUND THEN RETURN ${s}.not_found('step', a->>'id'); END IF;
      RETURN jsonb_build_object('ok', hit);
    END $f$;

    -- Events checked already, as chunks of their steps' logs (schema version 5): each step's
    -- events of the call one row, without their step_id and seq (the chunk gives them).
    CREATE OR REPLACE FUNCTION ${s}.put_chunks(events jsonb) RETURNS void LANGUAGE sql AS $f$
      INSERT INTO ${s}.chunks (step_id, last_seq, first_seq, events)
        SELECT e->>'step_id', max((e->>'seq')::int), min((e->>'seq')::int),
            json_agg((e - 'step_id' - 'seq')::json ORDER BY (e->>'seq')::int)
          FROM jsonb_array_elements(events) e GROUP BY e->>'step_id' $f$;

    -- The common append: events of one step whose seqs run first..last without a gap. The
    -- update that moves the step's last seq is the check; nothing else is written unless it
    -- matched.
    CREATE OR REPLACE FUNCTION ${s}.append_run(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE first int := (a->>'first')::int;
    BEGIN
      UPDATE ${s}.steps SET last_seq = (a->>'last')::int
        WHERE step_id = a->>'id' AND last_seq = first - 1;
      IF NOT FOUND THEN RETURN ${s}.refused_append(a->>'id', first); END IF;
      PERFORM ${s}.put_chunks(a->'events');
      RETURN '{"ok": null}';
    END $f$;

    -- Why a step's log did not take seq "first": the step is unknown, or its log is elsewhere.
    CREATE OR REPLACE FUNCTION ${s}.refused_append(id text, first int) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE at int;
    BEGIN
      SELECT last_seq INTO at FROM ${s}.steps WHERE step_id = id;
      IF NOT FOUND THEN RETURN ${s}.not_found('step', id); END IF;
      RETURN ${s}.conflict(format('step %s: expected seq %s, got %s', id, at + 1, first),
        jsonb_build_object('step_id', id, 'expected', at + 1, 'got', first));
    END $f$;

    -- A step's end whose events (if any) are its own, first..last without a gap: the update
    -- of its record is the check of its log; then its events and its run's usage.
    CREATE OR REPLACE FUNCTION ${s}.end_run(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE first int := (a->>'first')::int;
    BEGIN
      IF a->'usage' IS NOT NULL THEN
        PERFORM 1 FROM ${s}.runs WHERE run_id = a->>'run_id' FOR UPDATE;
        IF NOT FOUND THEN RETURN ${s}.not_found('run', a->>'run_id'); END IF;
      END IF;
      UPDATE ${s}.steps
        SET record = (record - ARRAY(SELECT jsonb_array_elements_text(a->'drop'))) || (a->'patch'),
          last_seq = coalesce((a->>'last')::int, last_seq)
        WHERE step_id = a->>'id' AND (first IS NULL OR last_seq = first - 1);
      IF NOT FOUND THEN
        IF first IS NULL THEN RETURN ${s}.not_found('step', a->>'id'); END IF;
        RETURN ${s}.refused_append(a->>'id', first);
      END IF;
      IF first IS NOT NULL THEN PERFORM ${s}.put_chunks(a->'events'); END IF;
      IF a->'usage' IS NOT NULL THEN
        UPDATE ${s}.runs SET record = jsonb_set(record, '{budget_usage}',
            ${s}.add_usage(record->'budget_usage', a->'usage'))
          WHERE run_id = a->>'run_id';
        DELETE FROM ${s}.holds WHERE run_id = a->>'run_id' AND step_id = a->>'id';
      END IF;
      RETURN '{"ok": null}';
    END $f$;

    -- Appends events in order, each step's rows locked while checked: every seq must continue
    -- its step's log, or nothing is written.
    CREATE OR REPLACE FUNCTION ${s}.append(events jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE ev jsonb; sid text; n int; at int; lasts jsonb := '{}';
    BEGIN
      FOR ev IN SELECT jsonb_array_elements(events) LOOP
        sid := ev->>'step_id';
        n := (ev->>'seq')::int;
        IF lasts ? sid THEN
          at := (lasts->>sid)::int;
        ELSE
          SELECT last_seq INTO at FROM ${s}.steps WHERE step_id = sid FOR UPDATE;
          IF NOT FOUND THEN RETURN ${s}.not_found('step', sid); END IF;
        END IF;
        IF n IS DISTINCT FROM at + 1 THEN
          RETURN ${s}.conflict(format('step %s: expected seq %s, got %s', sid, at + 1, ev->'seq'),
            jsonb_build_object('step_id', sid, 'expected', at + 1, 'got', ev->'seq'));
        END IF;
        lasts := lasts || jsonb_build_object(sid, n);
      END LOOP;
      PERFORM ${s}.put_chunks(events);
      -- One step at a time, by its key (a join would let the planner scan every step).
      FOR sid, n IN SELECT key, value::int FROM jsonb_each_text(lasts) LOOP
        UPDATE ${s}.steps SET last_seq = n WHERE step_id = sid;
      END LOOP;
      RETURN '{"ok": null}';
    END $f$;

    -- A step's end: its last events, its record's patch, its run's usage; all or nothing.
    CREATE OR REPLACE FUNCTION ${s}.end_step(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE r jsonb;
    BEGIN
      PERFORM 1 FROM ${s}.steps WHERE step_id = a->>'id' FOR UPDATE;
      IF NOT FOUND THEN RETURN ${s}.not_found('step', a->>'id'); END IF;
      IF a->'usage' IS NOT NULL THEN
        PERFORM 1 FROM ${s}.runs WHERE run_id = a->>'run_id' FOR UPDATE;
        IF NOT FOUND THEN RETURN ${s}.not_found('run', a->>'run_id'); END IF;
      END IF;
      IF jsonb_array_length(a->'events') > 0 THEN
        r := ${s}.append(a->'events');
        IF r ? 'err' THEN RETURN r; END IF;
      END IF;
      PERFORM ${s}.update_step(a);
      IF a->'usage' IS NOT NULL THEN
        PERFORM ${s}.add_run_usage(
          jsonb_build_object('id', a->>'run_id', 'usage', a->'usage', 'step', a->>'id'));
      END IF;
      RETURN '{"ok": null}';
    END $f$;

    CREATE OR REPLACE FUNCTION ${s}.get_run(a jsonb) RETURNS jsonb LANGUAGE sql STABLE AS $f$
      SELECT jsonb_build_object('ok', (SELECT record FROM ${s}.runs WHERE run_id = a->>'id')) $f$;

    CREATE OR REPLACE FUNCTION ${s}.get_step(a jsonb) RETURNS jsonb LANGUAGE sql STABLE AS $f$
      SELECT jsonb_build_object('ok', (SELECT record FROM ${s}.steps WHERE step_id = a->>'id')) $f$;

    CREATE OR REPLACE FUNCTION ${s}.fenced(id text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS
      $f$ SELECT jsonb_build_object('err', 'fenced', 'id', id) $f$;

    -- A fleet replica's turn at a step: the job's start count (BullMQ's, which grows with
    -- every take of the job) and the lock token it came with. A later turn replaces an earlier
    -- one; the same turn again is a no-op; an earlier one is refused (a replica that took the
    -- job before another did, and got here after it).
    CREATE OR REPLACE FUNCTION ${s}.take_turn(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    BEGIN
      INSERT INTO ${s}.turns AS t (step_id, turn, token)
        VALUES (a->>'id', (a->>'turn')::bigint, a->>'token')
        ON CONFLICT (step_id) DO UPDATE SET turn = EXCLUDED.turn, token = EXCLUDED.token
        WHERE t.turn < EXCLUDED.turn;
      IF FOUND THEN RETURN '{"ok": null}'; END IF;
      PERFORM 1 FROM ${s}.turns WHERE step_id = a->>'id' AND token = a->>'token';
      IF FOUND THEN RETURN '{"ok": null}'; END IF;
      RETURN ${s}.fenced(a->>'id');
    END $f$;

    -- Whether a writer's turn ("id", "token") is still the step's. The row stays locked to the
    -- end of the batch: a take of the step by another replica waits until this batch commits,
    -- so no write of an earlier turn commits after a later turn has begun.
    CREATE OR REPLACE FUNCTION ${s}.holds_turn(f jsonb) RETURNS boolean LANGUAGE plpgsql AS $f$
    BEGIN
      PERFORM 1 FROM ${s}.turns WHERE step_id = f->>'id' AND token = f->>'token' FOR SHARE;
      RETURN FOUND;
    END $f$;

    -- A reservation against a run's budgets (budget-reservations.ts): it fits when the run's
    -- ended use, the other steps' holds, this attempt's own and the draw stay within each
    -- limit. The run's row is locked first: one run's reservations are taken one at a time.
    -- A hold of another attempt at the same step (a lost one) is replaced.
    CREATE OR REPLACE FUNCTION ${s}.reserve(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE used jsonb; others float8[]; own float8[]; want float8[]; lim text; d int; room float8;
      dims text[] := '{tokens_in,tokens_out,cost_usd}';
      limits text[] := '{max_tokens_in,max_tokens_out,max_cost_usd}';
    BEGIN
      SELECT record->'budget_usage' INTO used FROM ${s}.runs WHERE run_id = a->>'run_id' FOR UPDATE;
      IF NOT FOUND THEN RETURN ${s}.not_found('run', a->>'run_id'); END IF;
      SELECT ARRAY[coalesce(sum(tokens_in), 0), coalesce(sum(tokens_out), 0), coalesce(sum(cost_usd), 0)]
        INTO others FROM ${s}.holds WHERE run_id = a->>'run_id' AND step_id <> a->>'step_id';
      SELECT ARRAY[tokens_in, tokens_out, cost_usd] INTO own FROM ${s}.holds
        WHERE run_id = a->>'run_id' AND step_id = a->>'step_id' AND token = a->>'token';
      IF NOT FOUND THEN own := '{0,0,0}'; END IF;
      want := ARRAY[(a->'draw'->>'tokens_in')::float8, (a->'draw'->>'tokens_out')::float8,
        (a->'draw'->>'cost_usd')::float8];
      FOR d IN 1..3 LOOP
        lim := a->'limits'->>limits[d];
        IF lim IS NOT NULL THEN
          room := lim::float8 - coalesce((used->>dims[d])::float8, 0) - others[d] - own[d];
          IF want[d] > room + 1e-9 THEN
            RETURN jsonb_build_object('err', 'over', 'limit', limits[d], 'asked', want[d],
              'left', greatest(0, room));
          END IF;
        END IF;
      END LOOP;
      INSERT INTO ${s}.holds (run_id, step_id, token, tokens_in, tokens_out, cost_usd)
        VALUES (a->>'run_id', a->>'step_id', a->>'token', own[1] + want[1], own[2] + want[2],
          own[3] + want[3])
        ON CONFLICT (run_id, step_id) DO UPDATE SET token = EXCLUDED.token,
          tokens_in = EXCLUDED.tokens_in, tokens_out = EXCLUDED.tokens_out,
          cost_usd = EXCLUDED.cost_usd;
      RETURN '{"ok": null}';
    END $f$;

    -- Adds a delta (negative gives back, never below 0) to an attempt's hold; nothing once it
    -- is gone (its step ended) or another attempt's.
    CREATE OR REPLACE FUNCTION ${s}.settle(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    BEGIN
      UPDATE ${s}.holds SET
          tokens_in = greatest(0, tokens_in + (a->'draw'->>'tokens_in')::float8),
          tokens_out = greatest(0, tokens_out + (a->'draw'->>'tokens_out')::float8),
          cost_usd = greatest(0, cost_usd + (a->'draw'->>'cost_usd')::float8)
        WHERE run_id = a->>'run_id' AND step_id = a->>'step_id' AND token = a->>'token';
      RETURN '{"ok": null}';
    END $f$;

    -- A batch: the held rows, then each operation in order, each answer in its place, kept under the batch's id
    -- (with "prune", those of batches five minutes old leave: they are read only just after a
    -- connection is lost). An operation carrying a "fence" (a
    -- fleet replica's turn) runs only while that turn is still its step's.
    CREATE OR REPLACE FUNCTION ${s}.apply(ops jsonb, batch text, prune boolean, held json)
    RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE op jsonb; answers jsonb[] := '{}'; kind text; result jsonb;
    BEGIN
      -- The rows the store held back (postgres-held-rows.ts) first: what it asks the server
      -- after them in program order may read them.
      IF held IS NOT NULL THEN PERFORM ${s}.write_held(held); END IF;
      FOR op IN SELECT jsonb_array_elements(ops) LOOP
        kind := op->>'op';
        IF op ? 'fence' AND NOT ${s}.holds_turn(op->'fence') THEN
          answers := answers || ${s}.fenced(op->'fence'->>'id');
          CONTINUE;
        END IF;
        answers := answers || CASE kind
          WHEN 'create_run' THEN ${s}.create_run(op)
          WHEN 'update_run' THEN ${s}.update_run(op)
          WHEN 'add_run_usage' THEN ${s}.add_run_usage(op)
          WHEN 'create_step' THEN ${s}.create_step(op)
          WHEN 'update_step' THEN ${s}.update_step(op)
          WHEN 'release_token' THEN ${s}.release_token(op)
          WHEN 'append_run' THEN ${s}.append_run(op)
          WHEN 'append' THEN ${s}.append(op->'events')
          WHEN 'end_run' THEN ${s}.end_run(op)
          WHEN 'end_step' THEN ${s}.end_step(op)
          WHEN 'get_run' THEN ${s}.get_run(op)
          WHEN 'get_step' THEN ${s}.get_step(op)
          WHEN 'take_turn' THEN ${s}.take_turn(op)
          WHEN 'reserve' THEN ${s}.reserve(op)
          WHEN 'settle' THEN ${s}.settle(op)
          WHEN 'barrier' THEN '{"ok": null}'::jsonb
          ${more.map((name) => `WHEN '${name}' THEN ${s}.${name}(op)`).join('\n          ')}
        END;
        IF answers[array_length(answers, 1)] IS NULL THEN
          RAISE EXCEPTION 'axon: unknown operation %', kind;
        END IF;
      END LOOP;
      result := to_jsonb(answers);
      INSERT INTO ${s}.batches (id, answers) VALUES (batch, result);
      IF prune THEN
        DELETE FROM ${s}.batches WHERE at < now() - interval '5 minutes';
      END IF;
      RETURN result;
    END $f$;`;
}
