/// `stpd_apply`, the server-side half of `PostgresStateStore.apply`: one `CALL` writes every
/// change of an `apply` and commits it, so a commit is one round trip (docs/fleet.md, "One round
/// trip per commit", says why a procedure rather than one multi-statement query).
///
/// - Each change's object row first (the versioned UPDATE, the INSERT of a new object, the
///   DELETE of a removed one), in order; a precondition that does not hold raises SQLSTATE
///   `SC409` with the object's id as its message, and the whole transaction rolls back.
/// - Then the counter row, whose lock serialises committers: from here to COMMIT only the event
///   rows, the lookup keys and the notification are written, all in this process of the server,
///   so the lock is held for the commit itself and no round trip.
/// - `COMMIT` inside the procedure: the reply (the latest seq) leaves only once the commit is
///   durable. A plain function would commit after its reply, when the client's Sync arrives, and
///   postgres-nio reports a query done at its CommandComplete, before that commit.
/// - `p_token`, a random number stored with the events, is how a commit whose reply was lost is
///   looked up (`PostgresStateStore.outcome`); `p_origin` names the committing store in the
///   notification (`PostgresEventFollower`); `p_hold` is how long the counter's lock was held,
///   measured on the server's clock after the commit.
///
/// Arrays are per change, index-aligned; `p_key_changes[j]` is the (1-based) change that
/// `p_keys[j]` files its object under. Times are seconds since 2001, as every time column.
enum PostgresApplyProcedure {
    /// A precondition that does not hold (`StoreConflict`): the SQLSTATE the procedure raises.
    static let conflictState = "SC409"

    static let create = """
        CREATE PROCEDURE stpd_apply(
            p_ids TEXT[], p_kinds TEXT[], p_owners BIGINT[], p_states TEXT[], p_created DOUBLE PRECISION[],
            p_updated DOUBLE PRECISION[], p_preconditions SMALLINT[], p_versions BIGINT[], p_statuses TEXT[],
            p_has_status BOOLEAN[], p_live BOOLEAN[], p_finished BOOLEAN[], p_removes BOOLEAN[], p_types TEXT[],
            p_objects TEXT[], p_keyed BOOLEAN[], p_key_changes INTEGER[], p_keys TEXT[], p_key_id TEXT,
            p_time DOUBLE PRECISION, p_token BIGINT, p_origin TEXT,
            INOUT p_latest BIGINT DEFAULT NULL, INOUT p_hold DOUBLE PRECISION DEFAULT NULL)
        LANGUAGE plpgsql AS $$
        DECLARE
            n INTEGER := cardinality(p_ids);
            c INTEGER;
            first BIGINT;
            filed TEXT[];
            locked TIMESTAMPTZ;
        BEGIN
            -- Preconditions: 0 whatever is there, 1 absent, 2 at p_versions[c].
            FOR c IN 1..n LOOP
                IF p_removes[c] THEN
                    IF p_preconditions[c] = 1 THEN
                        PERFORM 1 FROM object WHERE id = p_ids[c];
                        IF FOUND THEN RAISE EXCEPTION USING ERRCODE = 'SC409', MESSAGE = p_ids[c]; END IF;
                    ELSIF p_preconditions[c] = 2 THEN
                        DELETE FROM object WHERE id = p_ids[c] AND version = p_versions[c];
                        IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'SC409', MESSAGE = p_ids[c]; END IF;
                    ELSE
                        DELETE FROM object WHERE id = p_ids[c];
                    END IF;
                ELSIF p_preconditions[c] = 2 THEN
                    UPDATE object SET state = p_states[c], key_id = p_key_id, updated_at = p_updated[c],
                        version = version + 1, status = CASE WHEN p_has_status[c] THEN p_statuses[c] END,
                        live = p_live[c], finished = p_finished[c]
                    WHERE id = p_ids[c] AND version = p_versions[c] AND NOT set_aside;
                    IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'SC409', MESSAGE = p_ids[c]; END IF;
                ELSIF p_preconditions[c] = 1 THEN
                    INSERT INTO object (id, kind, owner_uid, state, key_id, created_at, updated_at, version, status,
                        live, finished)
                    VALUES (p_ids[c], p_kinds[c], p_owners[c], p_states[c], p_key_id, p_created[c], p_updated[c], 1,
                        CASE WHEN p_has_status[c] THEN p_statuses[c] END, p_live[c], p_finished[c])
                    ON CONFLICT (id) DO NOTHING;
                    IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'SC409', MESSAGE = p_ids[c]; END IF;
                ELSE
                    -- Kind, owner and creation time are fixed when the object is created.
                    INSERT INTO object (id, kind, owner_uid, state, key_id, created_at, updated_at, version, status,
                        live, finished)
                    VALUES (p_ids[c], p_kinds[c], p_owners[c], p_states[c], p_key_id, p_created[c], p_updated[c], 1,
                        CASE WHEN p_has_status[c] THEN p_statuses[c] END, p_live[c], p_finished[c])
                    ON CONFLICT (id) DO UPDATE SET state = excluded.state, key_id = excluded.key_id,
                        updated_at = excluded.updated_at, version = object.version + 1, status = excluded.status,
                        live = excluded.live, finished = excluded.finished;
                END IF;
            END LOOP;

            -- The counter last: its row lock is held from here to the COMMIT below.
            UPDATE event_counter SET latest_seq = latest_seq + n WHERE id = 1 RETURNING latest_seq INTO p_latest;
            locked := clock_timestamp();
            first := p_latest - n + 1;
            INSERT INTO event (seq, time, type, object_id, object_kind, owner_uid, object, key_id, commit_token)
            SELECT first + e.o - 1, p_time, e.t, e.i, e.k, e.w, e.b, p_key_id, p_token
            FROM unnest(p_types, p_ids, p_kinds, p_owners, p_objects) WITH ORDINALITY AS e(t, i, k, w, b, o);
            -- Keys an object keeps keep their ordinal; new ones get the seq of the change filing them.
            FOR c IN 1..n LOOP
                IF p_removes[c] THEN
                    DELETE FROM object_key WHERE object_id = p_ids[c];
                ELSIF p_keyed[c] THEN
                    filed := ARRAY(SELECT p_keys[j] FROM generate_subscripts(p_key_changes, 1) AS j
                        WHERE p_key_changes[j] = c);
                    DELETE FROM object_key WHERE object_id = p_ids[c] AND NOT (key = ANY(filed));
                    INSERT INTO object_key (key, object_id, owner_uid, ordinal)
                    SELECT k, p_ids[c], p_owners[c], first + c - 1 FROM unnest(filed) AS k
                    ON CONFLICT (key, object_id) DO NOTHING;
                END IF;
            END LOOP;
            -- A hint for the other daemons, delivered only if this commits: the last seq and
            -- which store committed it (its own follower need not read what it publishes itself).
            PERFORM pg_notify('stpd_events', p_latest || ' ' || p_origin);
            COMMIT;
            p_hold := extract(epoch FROM clock_timestamp() - locked);
        END
        $$
        """
}
