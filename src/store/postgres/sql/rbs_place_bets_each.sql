-- Several place-bet commands in one call and one transaction, one after the other: each sees what
-- the ones before it wrote. rbs_place_bets hands it the calls whose commands could see each other.
CREATE OR REPLACE FUNCTION rbs_place_bets_each(p_commands jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
DECLARE
  c jsonb;
  v_out jsonb := '[]'::jsonb;
BEGIN
  FOR c IN SELECT value FROM jsonb_array_elements(p_commands) LOOP
    v_out := v_out || jsonb_build_array(rbs_place_bet(
      c->>0, c->>1, c->>2, c->>3, (c->>4)::bigint, (c->>5)::integer, c->>6,
      c->>7, c->>8, c->>9, (c->>10)::integer, c->>11, c->>12, c->>13,
      c->>14, c->>15, c->>16, c->>17, (c->>18)::bigint, (c->>19)::bigint, c->>20, c->>21,
      (c->>22)::integer, (c->>23)::bigint, (c->>24)::bigint));
  END LOOP;
  RETURN v_out;
END
$function$
