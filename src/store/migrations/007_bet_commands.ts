import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * PostgreSQL: the hot money commands (place a bet, cash one out) as server-side functions, so each is
 * one statement, one round trip and one transaction instead of eight awaited statements inside
 * BEGIN … COMMIT. Everything that needs no store was decided by the service beforehand (operator and
 * compliance settings, the request hash, the exact response text); the function does what needs the
 * rows, in the order the interactive transaction did, with the same locks:
 *
 * - the idempotency key is claimed with its final response in one INSERT (a concurrent duplicate on
 *   another instance waits on the key's unique index until this commits, then replays it); a key
 *   already used returns its stored row for the service to replay or refuse (IDEMPOTENCY_KEY_REUSED),
 *   and a conflict on the signature alone (no row under this key) is a replay under another key;
 * - the open round is read FOR SHARE, so the engine's move to `running` waits for the bet to commit;
 * - a refusal the service decided (or "no round is taking bets") is stored under the key, as before;
 * - anything uncommon that the service's full path handles (a compliance rule that would raise a
 *   flag, state that changed since the service read it) answers `full_path` before anything is
 *   written (rbs_place_bet) or aborts the statement with SQLSTATE RB001 (rbs_cash_out): nothing is
 *   written either way, and the service runs the command through its full interactive path;
 * - rbs_place_bets runs several bets in one call and one transaction (see bets/bet-commands.ts).
 *
 * SQLite needs none of this: its commands run as synchronous units inside the group commit.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;

  await sql`
CREATE OR REPLACE FUNCTION rbs_claim_key(
  p_operator_id text, p_key text, p_hash text, p_signature text, p_now bigint, p_status integer, p_response text
) RETURNS jsonb LANGUAGE plpgsql AS $fn$
DECLARE
  v_row record;
BEGIN
  INSERT INTO idempotency_keys (operator_id, idem_key, request_hash, status_code, response, created_at, signature)
  VALUES (p_operator_id, p_key, p_hash, p_status, p_response, p_now, p_signature)
  ON CONFLICT DO NOTHING;
  IF FOUND THEN
    RETURN NULL;
  END IF;
  SELECT request_hash, status_code, response INTO v_row
  FROM idempotency_keys WHERE operator_id = p_operator_id AND idem_key = p_key;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('outcome', 'signature_replayed');
  END IF;
  RETURN jsonb_build_object('outcome', 'existing', 'request_hash', v_row.request_hash,
    'status_code', v_row.status_code, 'response', v_row.response);
END
$fn$`.execute(db);

  // Crash (p_round_id NULL: the world's newest open round) and Stock Race (the round the service read).
  await sql`
CREATE OR REPLACE FUNCTION rbs_place_bet(
  p_operator_id text, p_key text, p_hash text, p_signature text, p_now bigint,
  p_refusal_status integer, p_refusal_body text,
  p_game text, p_world text, p_round_id text, p_closed_status integer, p_closed_body text,
  p_ok_prefix text, p_ok_suffix text,
  p_bet_id text, p_player text, p_session_id text, p_currency text, p_amount bigint, p_auto_cashout integer,
  p_selections text, p_status text,
  p_velocity_limit integer, p_velocity_since bigint
) RETURNS jsonb LANGUAGE plpgsql AS $fn$
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
    selections, status, payout, cashout_multiplier, cashout_kind, placed_at, settled_at)
  VALUES (p_bet_id, p_operator_id, p_game, v_round_id, v_round_number, p_player, p_session_id, p_currency, p_amount,
    p_auto_cashout, p_selections, p_status, NULL, NULL, NULL, p_now, NULL);
  RETURN jsonb_build_object('outcome', 'placed', 'round_id', v_round_id, 'round_number', v_round_number);
END
$fn$`.execute(db);

  // Several concurrent bets in one call and one transaction (one commit, one round lock for all):
  // rbs_place_bet writes nothing before it can answer full_path, so one bet never aborts another.
  await sql`
CREATE OR REPLACE FUNCTION rbs_place_bets(p_commands jsonb) RETURNS jsonb LANGUAGE plpgsql AS $fn$
DECLARE
  c jsonb;
  v_out jsonb := '[]'::jsonb;
BEGIN
  FOR c IN SELECT value FROM jsonb_array_elements(p_commands) LOOP
    v_out := v_out || jsonb_build_array(rbs_place_bet(
      c->>0, c->>1, c->>2, c->>3, (c->>4)::bigint, (c->>5)::integer, c->>6,
      c->>7, c->>8, c->>9, (c->>10)::integer, c->>11, c->>12, c->>13,
      c->>14, c->>15, c->>16, c->>17, (c->>18)::bigint, (c->>19)::integer, c->>20, c->>21,
      (c->>22)::integer, (c->>23)::bigint));
  END LOOP;
  RETURN v_out;
END
$fn$`.execute(db);

  await sql`
CREATE OR REPLACE FUNCTION rbs_cash_out(
  p_operator_id text, p_key text, p_hash text, p_signature text, p_now bigint,
  p_refusal_status integer, p_refusal_body text,
  p_bet_id text, p_round_id text, p_payout bigint, p_multiplier integer, p_kind text, p_alive_since bigint,
  p_ok_body text, p_event_id text, p_event_seq bigint, p_event_data text, p_livemode integer,
  p_timing_streak integer, p_timing_window bigint, p_timing_since bigint
) RETURNS jsonb LANGUAGE plpgsql AS $fn$
DECLARE
  v_claim jsonb;
  v_round_status text;
  v_alive bigint;
  v_n bigint;
  v_spread bigint;
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
    SELECT count(*), max(elapsed) - min(elapsed) INTO v_n, v_spread FROM (
      SELECT b.settled_at - r.running_at AS elapsed FROM bets b JOIN rounds r ON r.id = b.round_id
      WHERE b.operator_id = p_operator_id AND b.player = (SELECT player FROM bets WHERE id = p_bet_id)
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
$fn$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`DROP FUNCTION IF EXISTS rbs_cash_out`.execute(db);
  await sql`DROP FUNCTION IF EXISTS rbs_place_bets`.execute(db);
  await sql`DROP FUNCTION IF EXISTS rbs_place_bet`.execute(db);
  await sql`DROP FUNCTION IF EXISTS rbs_claim_key`.execute(db);
}
