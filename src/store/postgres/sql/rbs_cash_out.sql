-- Cashes out one Crash bet as one statement, on the plan the service decided from the rows it read:
-- stores a refusal under the key, or claims the key and settles the bet while it is still active and
-- its round still running with a recent heartbeat, records bet.settled and its webhook deliveries.
-- The machine-timing rule reads the player's recent manual cash-outs only when enough bets exist.
-- Anything else (state changed since the read, the timing rule hit) raises SQLSTATE RB001: the
-- statement is rolled back and the service runs the interactive path.
CREATE OR REPLACE FUNCTION rbs_cash_out(
  p_operator_id text, p_key text, p_hash text, p_signature text, p_now bigint, p_refusal_status integer,
  p_refusal_body text, p_bet_id text, p_round_id text, p_payout bigint, p_multiplier bigint, p_kind text,
  p_alive_since bigint, p_ok_body text, p_event_id text, p_event_seq bigint, p_event_data text,
  p_livemode integer, p_timing_streak integer, p_timing_window bigint, p_timing_since bigint)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_claim jsonb;
  v_round_status text;
  v_alive bigint;
  v_n bigint;
  v_spread bigint;
  v_player text;
BEGIN
  IF p_refusal_status IS NOT NULL THEN
    v_claim := rbs_claim_key(p_operator_id, p_key, p_hash, p_signature, p_now, p_refusal_status, p_refusal_body);
    RETURN coalesce(v_claim, jsonb_build_object('outcome', 'refused'));
  END IF;
  v_claim := rbs_claim_key(p_operator_id, p_key, p_hash, p_signature, p_now, 200, p_ok_body);
  IF v_claim IS NOT NULL THEN
    RETURN v_claim;
  END IF;

  -- The bet row first (as the interactive path locked it): a void updates it too, so the two serialise.
  UPDATE bets SET status = 'cashed_out', payout = p_payout, cashout_multiplier = p_multiplier,
    cashout_kind = p_kind, settled_at = p_now
  WHERE id = p_bet_id AND status = 'active';
  IF NOT FOUND THEN
    RAISE EXCEPTION 'bet % changed since it was read', p_bet_id USING ERRCODE = 'RB001';
  END IF;
  SELECT status, coalesce(heartbeat_at, running_at) INTO v_round_status, v_alive FROM rounds WHERE id = p_round_id;
  IF v_round_status IS DISTINCT FROM 'running' OR v_alive IS NULL OR v_alive < p_alive_since THEN
    RAISE EXCEPTION 'round % changed since it was read', p_round_id USING ERRCODE = 'RB001';
  END IF;

  IF p_timing_streak >= 2 AND p_kind = 'manual' THEN
    SELECT player INTO v_player FROM bets WHERE id = p_bet_id;
    -- Fewer bets placed since p_timing_since than the streak: no streak of cash-outs is possible,
    -- and the dearer read below is skipped (the (operator, player, placed_at) index answers this).
    SELECT count(*) INTO v_n FROM (
      SELECT 1 FROM bets WHERE operator_id = p_operator_id AND player = v_player AND placed_at > p_timing_since
      LIMIT p_timing_streak
    ) candidates;
  END IF;
  IF p_timing_streak >= 2 AND p_kind = 'manual' AND v_n >= p_timing_streak THEN
    SELECT count(*), max(elapsed) - min(elapsed) INTO v_n, v_spread FROM (
      SELECT b.settled_at - r.running_at AS elapsed FROM bets b JOIN rounds r ON r.id = b.round_id
      WHERE b.operator_id = p_operator_id AND b.player = v_player
        AND b.game = 'crash' AND b.status = 'cashed_out' AND b.cashout_kind = 'manual' AND b.placed_at > p_timing_since
      ORDER BY b.placed_at DESC, b.id LIMIT p_timing_streak
    ) recent WHERE elapsed IS NOT NULL;
    IF v_n >= p_timing_streak AND v_spread <= p_timing_window THEN
      RAISE EXCEPTION 'machine timing rule hit' USING ERRCODE = 'RB001';
    END IF;
  END IF;

  INSERT INTO events (id, seq, operator_id, type, created_at, data, livemode)
  VALUES (p_event_id, p_event_seq, p_operator_id, 'bet.settled', p_now, p_event_data, p_livemode);
  INSERT INTO webhook_deliveries (id, event_id, endpoint_id, operator_id, status, attempts, next_attempt_at, created_at)
  SELECT 'dlv_' || gen_random_uuid()::text, p_event_id, e.id, e.operator_id, 'pending', 0, p_now, p_now
  FROM webhook_endpoints e
  WHERE e.enabled = 1 AND e.operator_id = p_operator_id AND e.events::jsonb ? 'bet.settled';
  RETURN jsonb_build_object('outcome', 'settled');
END
$function$
