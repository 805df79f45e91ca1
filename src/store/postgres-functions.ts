/**
 * @module The PostgreSQL store's write path as SQL functions (schema version 2): a batch of
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

/** The functions of schema version 2, in the schema `s` (a checked identifier). */
export function writeFunctions(s: string): string {
  return `
    ALTER TABLE ${s}.runs ALTER COLUMN record TYPE jsonb USING record::jsonb;
    ALTER TABLE ${s}.steps ALTER COLUMN record TYPE jsonb USING record::jsonb;
    -- Room on each page for a row's next version: a step's record is rewritten at its end and
    -- its log's last seq moves at each append; an update that fits beside the row touches no
    -- index (a HOT update).
    ALTER TABLE ${s}.steps SET (fillfactor = 70);
    ALTER TABLE ${s}.runs SET (fillfactor = 70);
    -- Leases (postgres-leases.ts): "until" in milliseconds of the server's clock.
    CREATE TABLE ${s}.leases (key TEXT PRIMARY KEY, owner TEXT NOT NULL, until BIGINT NOT NULL);

    CREATE FUNCTION ${s}.not_found(kind text, id text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS
      $f$ SELECT jsonb_build_object('err', 'not_found', 'kind', kind, 'id', id) $f$;

    CREATE FUNCTION ${s}.conflict(message text, details jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS
      $f$ SELECT jsonb_build_object('err', 'conflict', 'message', message, 'details', details) $f$;

    CREATE FUNCTION ${s}.add_usage(a jsonb, b jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $f$
      SELECT jsonb_build_object(
        'tokens_in', (a->>'tokens_in')::float8 + (b->>'tokens_in')::float8,
        'tokens_out', (a->>'tokens_out')::float8 + (b->>'tokens_out')::float8,
        'cost_usd', (a->>'cost_usd')::float8 + (b->>'cost_usd')::float8,
        'wall_ms', (a->>'wall_ms')::float8 + (b->>'wall_ms')::float8) $f$;

    CREATE FUNCTION ${s}.create_run(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
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

    CREATE FUNCTION ${s}.update_run(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    BEGIN
      UPDATE ${s}.runs SET record = record || (a->'patch'),
          status = coalesce(a->'patch'->>'status', status)
        WHERE run_id = a->>'id';
      IF NOT FOUND THEN RETURN ${s}.not_found('run', a->>'id'); END IF;
      RETURN '{"ok": null}';
    END $f$;

    CREATE FUNCTION ${s}.add_run_usage(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE total jsonb;
    BEGIN
      UPDATE ${s}.runs
        SET record = jsonb_set(record, '{budget_usage}', ${s}.add_usage(record->'budget_usage', a->'usage'))
        WHERE run_id = a->>'id' RETURNING record->'budget_usage' INTO total;
      IF NOT FOUND THEN RETURN ${s}.not_found('run', a->>'id'); END IF;
      RETURN jsonb_build_object('ok', total);
    END $f$;

    -- Creates a step; with "claim", first finds the step of its run holding its client token.
    CREATE FUNCTION ${s}.create_step(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
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

    CREATE FUNCTION ${s}.update_step(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    BEGIN
      UPDATE ${s}.steps SET record = (record - ARRAY(SELECT jsonb_array_elements_text(a->'drop'))) || (a->'patch')
        WHERE step_id = a->>'id';
      IF NOT FOUND THEN RETURN ${s}.not_found('step', a->>'id'); END IF;
      RETURN '{"ok": null}';
    END $f$;

    CREATE FUNCTION ${s}.release_token(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE hit jsonb;
    BEGIN
      UPDATE ${s}.steps SET client_token = NULL, record = record || '{"client_token": null}'
        WHERE step_id = a->>'id' RETURNING record INTO hit;
      IF NOT FOUND THEN RETURN ${s}.not_found('step', a->>'id'); END IF;
      RETURN jsonb_build_object('ok', hit);
    END $f$;

    -- The common append: events of one step whose seqs run first..last without a gap. The
    -- update that moves the step's last seq is the check; nothing else is written unless it
    -- matched.
    CREATE FUNCTION ${s}.append_run(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE first int := (a->>'first')::int;
    BEGIN
      UPDATE ${s}.steps SET last_seq = (a->>'last')::int
        WHERE step_id = a->>'id' AND last_seq = first - 1;
      IF NOT FOUND THEN RETURN ${s}.refused_append(a->>'id', first); END IF;
      INSERT INTO ${s}.events (step_id, seq, event)
        SELECT a->>'id', (e->>'seq')::int, e::json FROM jsonb_array_elements(a->'events') e;
      RETURN '{"ok": null}';
    END $f$;

    -- Why a step's log did not take seq "first": the step is unknown, or its log is elsewhere.
    CREATE FUNCTION ${s}.refused_append(id text, first int) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE at int;
    BEGIN
      SELECT last_seq INTO at FROM ${s}.steps WHERE step_id = id;
      IF NOT FOUND THEN RETURN ${s}.not_found('step', id); END IF;
      RETURN ${s}.conflict(format('step %s: expected seq %s, got %s', id, at + 1, first),
        jsonb_build_object('step_id', id, 'expected', at + 1, 'got', first));
    END $f$;

    -- A step's end whose events (if any) are its own, first..last without a gap: the update
    -- of its record is the check of its log; then its events and its run's usage.
    CREATE FUNCTION ${s}.end_run(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
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
      IF first IS NOT NULL THEN
        INSERT INTO ${s}.events (step_id, seq, event)
          SELECT a->>'id', (e->>'seq')::int, e::json FROM jsonb_array_elements(a->'events') e;
      END IF;
      IF a->'usage' IS NOT NULL THEN
        UPDATE ${s}.runs SET record = jsonb_set(record, '{budget_usage}',
            ${s}.add_usage(record->'budget_usage', a->'usage'))
          WHERE run_id = a->>'run_id';
      END IF;
      RETURN '{"ok": null}';
    END $f$;

    -- Appends events in order, each step's rows locked while checked: every seq must continue
    -- its step's log, or nothing is written.
    CREATE FUNCTION ${s}.append(events jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
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
      INSERT INTO ${s}.events (step_id, seq, event)
        SELECT e->>'step_id', (e->>'seq')::int, e::json FROM jsonb_array_elements(events) e;
      -- One step at a time, by its key (a join would let the planner scan every step).
      FOR sid, n IN SELECT key, value::int FROM jsonb_each_text(lasts) LOOP
        UPDATE ${s}.steps SET last_seq = n WHERE step_id = sid;
      END LOOP;
      RETURN '{"ok": null}';
    END $f$;

    -- A step's end: its last events, its record's patch, its run's usage; all or nothing.
    CREATE FUNCTION ${s}.end_step(a jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
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
        PERFORM ${s}.add_run_usage(jsonb_build_object('id', a->>'run_id', 'usage', a->'usage'));
      END IF;
      RETURN '{"ok": null}';
    END $f$;

    CREATE FUNCTION ${s}.get_run(a jsonb) RETURNS jsonb LANGUAGE sql STABLE AS $f$
      SELECT jsonb_build_object('ok', (SELECT record FROM ${s}.runs WHERE run_id = a->>'id')) $f$;

    CREATE FUNCTION ${s}.get_step(a jsonb) RETURNS jsonb LANGUAGE sql STABLE AS $f$
      SELECT jsonb_build_object('ok', (SELECT record FROM ${s}.steps WHERE step_id = a->>'id')) $f$;

    -- A batch: each operation in order, each answer in its place.
    CREATE FUNCTION ${s}.apply(ops jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
    DECLARE op jsonb; answers jsonb[] := '{}'; kind text;
    BEGIN
      FOR op IN SELECT jsonb_array_elements(ops) LOOP
        kind := op->>'op';
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
          WHEN 'barrier' THEN '{"ok": null}'::jsonb
        END;
        IF answers[array_length(answers, 1)] IS NULL THEN
          RAISE EXCEPTION 'axon: unknown operation %', kind;
        END IF;
      END LOOP;
      RETURN to_jsonb(answers);
    END $f$;`;
}
