-- Places one bet as one statement: claims the key with the final response, reads the round FOR SHARE
-- (the engine's move to running waits for the bet to commit), applies the bet velocity rule and writes
-- the bet. A refusal decided by the service (or no round taking bets) is stored under the key alone.
-- Anything the service must decide with the interactive path answers full_path before any write.
-- Arguments by position are listed in bets/bet-commands.ts (placeBetParams).
CREATE OR REPLACE FUNCTION rbs_place_bet(
  p_operator_id text, p_key text, p_hash text, p_signature text, p_now bigint, p_refusal_status integer,
  p_refusal_body text, p_game text, p_world text, p_round_id text, p_closed_status integer,
  p_closed_body text, p_ok_prefix text, p_ok_suffix text, p_bet_id text, p_player text, p_session_id text,
  p_currency text, p_amount bigint, p_auto_cashout bigint, p_selections text, p_status text,
  p_velocity_limit integer, p_velocity_since bigint, p_potential_payout bigint)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_round_id text;
  v_round_number bigint;
  v_closes bigint;
  v_round_status text;
  v_status integer;
  v_response text;
  v_claim jsonb;
  v_n bigint;
BEGIN
  IF p_refusal_status IS NOT NULL THEN
    v_status := p_refusal_status;
    v_response := p_refusal_body;
  ELSIF p_round_id IS NULL THEN
    IF p_world IS NULL THEN
      SELECT id, round_number, betting_closes_at INTO v_round_id, v_round_number, v_closes FROM rounds
      WHERE game = p_game AND status = 'open' AND operator_id IS NULL
      ORDER BY round_number DESC LIMIT 1 FOR SHARE;
    ELSE
      SELECT id, round_number, betting_closes_at INTO v_round_id, v_round_number, v_closes FROM rounds
      WHERE game = p_game AND status = 'open' AND operator_id = p_world
      ORDER BY round_number DESC LIMIT 1 FOR SHARE;
    END IF;
    IF v_round_id IS NULL OR p_now >= v_closes THEN
      IF p_closed_status IS NULL THEN
        RETURN jsonb_build_object('outcome', 'full_path');
      END IF;
      v_status := p_closed_status;
      v_response := p_closed_body;
    END IF;
  ELSE
    SELECT id, round_number, betting_closes_at, status INTO v_round_id, v_round_number, v_closes, v_round_status
    FROM rounds WHERE id = p_round_id AND game = p_game AND operator_id IS NOT DISTINCT FROM p_world FOR SHARE;
    IF v_round_id IS NULL OR v_round_status <> 'open' OR p_now >= v_closes THEN
      RETURN jsonb_build_object('outcome', 'full_path');
    END IF;
  END IF;
  IF v_status IS NULL THEN
    v_status := 200;
    v_response := p_ok_prefix || v_round_number::text || p_ok_suffix;
    IF p_velocity_limit > 0 THEN
      SELECT count(*) INTO v_n FROM bets
      WHERE operator_id = p_operator_id AND player = p_player AND placed_at > p_velocity_since;
      -- This bet counts too; over the limit the full path decides whether a flag is due.
      IF v_n + 1 > p_velocity_limit THEN
        RETURN jsonb_build_object('outcome', 'full_path');
      END IF;
    END IF;
  END IF;

  v_claim := rbs_claim_key(p_operator_id, p_key, p_hash, p_signature, p_now, v_status, v_response);
  IF v_claim IS NOT NULL THEN
    RETURN v_claim;
  END IF;
  IF v_status <> 200 THEN
    RETURN jsonb_build_object('outcome', 'refused');
  END IF;


  INSERT INTO bets (id, operator_id, game, round_id, round_number, player, session_id, currency, amount, auto_cashout,
    selections, status, payout, cashout_multiplier, cashout_kind, placed_at, settled_at, potential_payout)
  VALUES (p_bet_id, p_operator_id, p_game, v_round_id, v_round_number, p_player, p_session_id, p_currency, p_amount,
    p_auto_cashout, p_selections, p_status, NULL, NULL, NULL, p_now, NULL, p_potential_payout);
  RETURN jsonb_build_object('outcome', 'placed', 'round_id', v_round_id, 'round_number', v_round_number);
END
$function$
