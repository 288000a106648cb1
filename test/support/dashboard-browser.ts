/** A browser-like client of the dashboard: keeps cookies, never follows redirects, posts forms. */
export function browser(baseUrl: string) {
  const jar = new Map<string, string>();
  const cookies: string[] = [];
  async function go(
    method: string,
    path: string,
    form?: Record<string, string | string[]>,
    headers: Record<string, string> = {},
  ) {
    const body = form
      ? new URLSearchParams(
          Object.entries(form).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x): [string, string] => [k, x])),
        )
      : undefined;
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      redirect: 'manual',
      headers: {
        cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...headers,
      },
      body,
    });
    for (const c of res.headers.getSetCookie()) {
      cookies.push(c);
      const [pair] = c.split(';');
      const [k, v] = pair!.split('=');
      if (v) jar.set(k!, v);
      else jar.delete(k!);
    }
    return { status: res.status, headers: res.headers, text: await res.text() };
  }
  return { go, jar, cookies };
}

/** The CSRF token of the first form on a page. */
export const csrfOf = (html: string): string => /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
