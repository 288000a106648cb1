-- Claims an idempotency key with its final response in one INSERT. A key already used answers its
-- stored row ('existing', for the service to replay or refuse); a conflict on the signature alone (no
-- row under this key) answers 'signature_replayed'. Null: claimed.
CREATE OR REPLACE FUNCTION rbs_claim_key(
  p_operator_id text, p_key text, p_hash text, p_signature text, p_now bigint, p_status integer,
  p_response text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
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
$function$
