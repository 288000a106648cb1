-- Several place-bet commands in one call, decided with a few statements for all of them. Answers and
-- rows are those of rbs_place_bets_each, command by command in order: rounds are locked FOR SHARE
-- first, then keys in command order, then the bets are written. A call in which a command could see
-- another's writes (the same key or signature twice, a velocity-limited player twice) runs
-- rbs_place_bets_each instead. Planned once per connection (force_generic_plan): left to choose,
-- PostgreSQL planned its array-parameter statements again on every call.
CREATE OR REPLACE FUNCTION rbs_place_bets(p_commands jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
  v_r record;
  v_round_id text;
  v_round_number bigint;
  v_closes bigint;
  v_round_status text;
  -- The rounds found, one entry per distinct (game, world, round id asked for).
  v_r_game text[] := '{}';
  v_r_world text[] := '{}';
  v_r_asked text[] := '{}';
  v_r_id text[] := '{}';
  v_r_number bigint[] := '{}';
  v_r_closes bigint[] := '{}';
  v_r_status text[] := '{}';
  -- Per command, in order: the status and response its key is claimed with (NULL: full_path, nothing
  -- written), its round, and whether its key was claimed.
  v_status integer[];
  v_response text[];
  v_round_ids text[];
  v_round_numbers bigint[];
  v_claimed boolean[];
  v_out jsonb;
BEGIN
  IF EXISTS (
    SELECT FROM jsonb_array_elements(p_commands) c GROUP BY c->>0, c->>1 HAVING count(*) > 1
  ) OR EXISTS (
    SELECT FROM jsonb_array_elements(p_commands) c WHERE c->>3 IS NOT NULL GROUP BY c->>3 HAVING count(*) > 1
  ) OR EXISTS (
    -- Two bets of one player where one has a velocity limit: the earlier may count in the later's check.
    SELECT FROM jsonb_array_elements(p_commands) c WHERE c->>5 IS NULL
    GROUP BY c->>0, c->>15 HAVING count(*) > 1 AND bool_or((c->>22)::integer > 0)
  ) THEN
    RETURN rbs_place_bets_each(p_commands);
  END IF;

  -- rbs_place_bet's round reads, once per distinct round, in order of first use.
  FOR v_r IN
    SELECT c->>7 AS game, c->>8 AS world, c->>9 AS asked
    FROM jsonb_array_elements(p_commands) WITH ORDINALITY AS t(c, i)
    WHERE c->>5 IS NULL
    GROUP BY 1, 2, 3 ORDER BY min(i)
  LOOP
    IF v_r.asked IS NULL AND v_r.world IS NULL THEN
      SELECT id, round_number, betting_closes_at, status INTO v_round_id, v_round_number, v_closes, v_round_status
      FROM rounds WHERE game = v_r.game AND status = 'open' AND operator_id IS NULL
      ORDER BY round_number DESC LIMIT 1 FOR SHARE;
    ELSIF v_r.asked IS NULL THEN
      SELECT id, round_number, betting_closes_at, status INTO v_round_id, v_round_number, v_closes, v_round_status
      FROM rounds WHERE game = v_r.game AND status = 'open' AND operator_id = v_r.world
      ORDER BY round_number DESC LIMIT 1 FOR SHARE;
    ELSE
      SELECT id, round_number, betting_closes_at, status INTO v_round_id, v_round_number, v_closes, v_round_status
      FROM rounds WHERE id = v_r.asked AND game = v_r.game AND operator_id IS NOT DISTINCT FROM v_r.world FOR SHARE;
    END IF;
    IF v_round_id IS NOT NULL THEN
      v_r_game := array_append(v_r_game, v_r.game);
      v_r_world := array_append(v_r_world, v_r.world);
      v_r_asked := array_append(v_r_asked, v_r.asked);
      v_r_id := array_append(v_r_id, v_round_id);
      v_r_number := array_append(v_r_number, v_round_number);
      v_r_closes := array_append(v_r_closes, v_closes);
      v_r_status := array_append(v_r_status, v_round_status);
    END IF;
  END LOOP;

  -- Each command's decision before its key, as rbs_place_bet makes it (velocity from the stored bets
  -- alone: no earlier bet of the call is the same player's when a limit applies).
  SELECT array_agg(CASE d.state WHEN 'refused' THEN (t.c->>5)::integer WHEN 'closed' THEN (t.c->>10)::integer
           WHEN 'open' THEN 200 END ORDER BY t.i),
         array_agg(CASE d.state WHEN 'refused' THEN t.c->>6 WHEN 'closed' THEN t.c->>11
           WHEN 'open' THEN (t.c->>12) || r.number::text || (t.c->>13) END ORDER BY t.i),
         array_agg(r.id ORDER BY t.i), array_agg(r.number ORDER BY t.i)
  INTO v_status, v_response, v_round_ids, v_round_numbers
  FROM jsonb_array_elements(p_commands) WITH ORDINALITY AS t(c, i)
  LEFT JOIN unnest(v_r_game, v_r_world, v_r_asked, v_r_id, v_r_number, v_r_closes, v_r_status)
    AS r(game, world, asked, id, number, closes, status)
    ON t.c->>5 IS NULL AND r.game = t.c->>7 AND r.world IS NOT DISTINCT FROM t.c->>8
      AND r.asked IS NOT DISTINCT FROM t.c->>9
  CROSS JOIN LATERAL (SELECT CASE
    WHEN t.c->>5 IS NOT NULL THEN 'refused'
    WHEN t.c->>9 IS NULL AND (r.id IS NULL OR (t.c->>4)::bigint >= r.closes) THEN
      CASE WHEN t.c->>10 IS NULL THEN 'full_path' ELSE 'closed' END
    WHEN t.c->>9 IS NOT NULL AND (r.id IS NULL OR r.status <> 'open' OR (t.c->>4)::bigint >= r.closes) THEN 'full_path'
    WHEN (t.c->>22)::integer > 0 AND (
      SELECT count(*) FROM bets b
      WHERE b.operator_id = t.c->>0 AND b.player = t.c->>15 AND b.placed_at > (t.c->>23)::bigint
    ) + 1 > (t.c->>22)::integer THEN 'full_path'
    ELSE 'open' END) AS d(state);

  WITH claimed AS (
    INSERT INTO idempotency_keys (operator_id, idem_key, request_hash, status_code, response, created_at, signature)
    SELECT t.c->>0, t.c->>1, t.c->>2, t.st, t.resp, (t.c->>4)::bigint, t.c->>3
    FROM ROWS FROM (jsonb_array_elements(p_commands), unnest(v_status), unnest(v_response)) WITH ORDINALITY
      AS t(c, st, resp, i)
    WHERE t.st IS NOT NULL
    ORDER BY t.i
    ON CONFLICT DO NOTHING
    RETURNING operator_id, idem_key
  )
  SELECT array_agg(k.operator_id IS NOT NULL ORDER BY t.i) INTO v_claimed
  FROM jsonb_array_elements(p_commands) WITH ORDINALITY AS t(c, i)
  LEFT JOIN claimed k ON k.operator_id = t.c->>0 AND k.idem_key = t.c->>1;

  INSERT INTO bets (id, operator_id, game, round_id, round_number, player, session_id, currency, amount, auto_cashout,
    selections, status, payout, cashout_multiplier, cashout_kind, placed_at, settled_at, potential_payout)
  SELECT t.c->>14, t.c->>0, t.c->>7, t.rid, t.rnum, t.c->>15, t.c->>16, t.c->>17, (t.c->>18)::bigint,
    (t.c->>19)::bigint, t.c->>20, t.c->>21, NULL, NULL, NULL, (t.c->>4)::bigint, NULL, (t.c->>24)::bigint
  FROM ROWS FROM (jsonb_array_elements(p_commands), unnest(v_status), unnest(v_claimed), unnest(v_round_ids),
    unnest(v_round_numbers)) WITH ORDINALITY AS t(c, st, claimed, rid, rnum, i)
  WHERE t.claimed AND t.st = 200
  ORDER BY t.i;

  -- A key not claimed is read here, as rbs_claim_key reads it (a CASE branch: only those not claimed).
  SELECT coalesce(jsonb_agg(CASE
      WHEN t.st IS NULL THEN jsonb_build_object('outcome', 'full_path')
      WHEN t.claimed AND t.st = 200 THEN
        jsonb_build_object('outcome', 'placed', 'round_id', t.rid, 'round_number', t.rnum)
      WHEN t.claimed THEN jsonb_build_object('outcome', 'refused')
      ELSE coalesce((
        SELECT jsonb_build_object('outcome', 'existing', 'request_hash', ik.request_hash,
          'status_code', ik.status_code, 'response', ik.response)
        FROM idempotency_keys ik WHERE ik.operator_id = t.c->>0 AND ik.idem_key = t.c->>1
      ), jsonb_build_object('outcome', 'signature_replayed'))
    END ORDER BY t.i), '[]'::jsonb) INTO v_out
  FROM ROWS FROM (jsonb_array_elements(p_commands), unnest(v_status), unnest(v_claimed), unnest(v_round_ids),
    unnest(v_round_numbers)) WITH ORDINALITY AS t(c, st, claimed, rid, rnum, i);
  RETURN v_out;
END
$function$
