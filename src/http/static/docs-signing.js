// "Try it out" in /docs, signed: a sandbox key and secret typed here stay in this page's memory (never
// stored, never sent: only the signature travels), and every request to Surface A or B is signed as
// README "Talk to it" says. Live keys are refused: the reference is no place for production secrets.
(() => {
  const credentials = { key: '', secret: '' };
  const encoder = new TextEncoder();
  const KEYED_WRITE = /^\/api\/public\/v1\/(place-bet|cashout)$/;

  const hex = (buffer) => [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, '0')).join('');
  /** Sets a header whatever case a field of the form gave it: two spellings would be sent joined. */
  const setHeader = (headers, name, value) => {
    for (const h of Object.keys(headers)) if (h.toLowerCase() === name.toLowerCase()) delete headers[h];
    headers[name] = value;
  };
  const headerValue = (headers, name) =>
    Object.entries(headers).find(([h]) => h.toLowerCase() === name)?.[1];

  async function sign(request) {
    if (!credentials.key) return request;
    const url = new URL(request.url, window.location.href);
    const surfaceA = url.pathname.startsWith('/api/public/v1/');
    if (!surfaceA && !url.pathname.startsWith('/v1/')) return request;
    const method = (request.method || 'GET').toUpperCase();
    let body = request.body ?? '';
    if (typeof body !== 'string') body = JSON.stringify(body);
    if (request.body !== undefined && request.body !== null) request.body = body;
    const timestamp = String(Date.now());
    const text = `${method}\n${url.pathname}${url.search}\n${timestamp}\n${body}`;
    const key = await crypto.subtle.importKey(
      'raw',
      encoder.encode(credentials.secret),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign'],
    );
    const signature = hex(await crypto.subtle.sign('HMAC', key, encoder.encode(text)));
    const names = surfaceA
      ? ['x-api-key', 'x-timestamp', 'x-signature']
      : ['X-Operator-Key', 'X-Timestamp', 'X-Signature'];
    request.headers = request.headers || {};
    // Whatever the form's required header fields hold, the page's values replace them.
    setHeader(request.headers, names[0], credentials.key);
    setHeader(request.headers, names[1], timestamp);
    setHeader(request.headers, names[2], signature);
    const given = headerValue(request.headers, 'idempotency-key');
    if (method === 'POST' && KEYED_WRITE.test(url.pathname) && (!given || given === 'auto')) {
      setHeader(request.headers, 'Idempotency-Key', crypto.randomUUID());
    }
    return request;
  }
  window.sandboxSigner = sign;

  function panel() {
    const form = document.createElement('form');
    form.id = 'sandbox-signing';
    form.setAttribute('aria-label', 'Sign Try it out requests with a sandbox key');
    form.innerHTML =
      '<strong>Sign "Try it out" with a sandbox key</strong> ' +
      '<label>API key <input id="sandbox-key" autocomplete="off" placeholder="pk_test_…" size="28"></label> ' +
      '<label>API secret <input id="sandbox-secret" type="password" autocomplete="off" size="28"></label> ' +
      '<button type="submit">Use for signing</button> <button type="button" id="sandbox-forget">Forget</button> ' +
      '<output id="sandbox-status" role="status">Not signing: requests go out unsigned.</output>' +
      '<small>Signing fills the key, timestamp and signature headers (type anything in those required ' +
      'fields); an Idempotency-Key left as "auto" gets a fresh one.</small>';
    const status = form.querySelector('#sandbox-status');
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const key = form.querySelector('#sandbox-key').value.trim();
      const secret = form.querySelector('#sandbox-secret').value.trim();
      credentials.key = '';
      credentials.secret = '';
      if (!key.startsWith('pk_test_')) {
        status.textContent = key.startsWith('pk_live')
          ? 'Refused: this is a live key. Only sandbox keys (pk_test_…) may be used in this page.'
          : 'Refused: a sandbox API key starts with pk_test_.';
        return;
      }
      if (!secret) {
        status.textContent = 'The API secret is needed to sign.';
        return;
      }
      credentials.key = key;
      credentials.secret = secret;
      form.querySelector('#sandbox-secret').value = '';
      status.textContent = `Signing as ${key} (kept in this page only; reloading forgets it).`;
    });
    form.querySelector('#sandbox-forget').addEventListener('click', () => {
      credentials.key = '';
      credentials.secret = '';
      status.textContent = 'Not signing: requests go out unsigned.';
    });
    document.body.prepend(form);
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', panel);
  else panel();
})();
