-- Several cash-outs in one call and one transaction. Each runs in a block of its own, so RB001 rolls
-- back that command alone (it answers full_path) and the others commit. A bet locked by another
-- transaction answers full_path at once (SKIP LOCKED) rather than wait while holding other bets.
CREATE OR REPLACE FUNCTION rbs_cash_outs(p_commands jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  c jsonb;
  v_answer jsonb;
  v_out jsonb := '[]'::jsonb;
BEGIN
  FOR c IN SELECT value FROM jsonb_array_elements(p_commands) LOOP
    BEGIN
      -- A refusal (argument 6 set) writes only its key and needs no bet row.
      IF c->>5 IS NULL THEN
        PERFORM 1 FROM bets WHERE id = c->>7 FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'bet % is missing or locked by another transaction', c->>7 USING ERRCODE = 'RB001';
        END IF;
      END IF;
      v_answer := rbs_cash_out(
        c->>0, c->>1, c->>2, c->>3, (c->>4)::bigint, (c->>5)::integer, c->>6,
        c->>7, c->>8, (c->>9)::bigint, (c->>10)::bigint, c->>11, (c->>12)::bigint,
        c->>13, c->>14, (c->>15)::bigint, c->>16, (c->>17)::integer,
        (c->>18)::integer, (c->>19)::bigint, (c->>20)::bigint);
    EXCEPTION WHEN SQLSTATE 'RB001' THEN
      v_answer := jsonb_build_object('outcome', 'full_path');
    END;
    v_out := v_out || jsonb_build_array(v_answer);
  END LOOP;
  RETURN v_out;
END
$function$
