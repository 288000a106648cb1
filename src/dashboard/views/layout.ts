import { html, type SafeHtml } from '../html';
import { ASSET_PATH } from '../assets';

export type NavKey = 'live' | 'webhooks' | 'credentials' | 'rounds' | 'bets' | 'settlements' | 'compliance';

const NAV: { key: NavKey; href: string; label: string }[] = [
  { key: 'live', href: '/dashboard', label: 'Live' },
  { key: 'webhooks', href: '/dashboard/webhooks', label: 'Webhooks' },
  { key: 'credentials', href: '/dashboard/credentials', label: 'Credentials' },
  { key: 'rounds', href: '/dashboard/rounds', label: 'Rounds' },
  { key: 'bets', href: '/dashboard/bets', label: 'Bets' },
  { key: 'settlements', href: '/dashboard/settlements', label: 'Wallet settlements' },
  { key: 'compliance', href: '/dashboard/compliance', label: 'Compliance' },
];

export interface PageUser {
  email: string;
  operatorName: string;
  csrfToken: string;
  /** A test-mode (sandbox) operator: every page says its data is test data. */
  testMode?: boolean;
}

export interface PageOptions {
  title: string;
  nav?: NavKey;
  user?: PageUser;
  /** One-line outcome of the action that led here (after a redirect). */
  notice?: string | null;
  error?: string | null;
  /** Module scripts from the dashboard assets. */
  scripts?: string[];
  body: SafeHtml;
}

const TEST_TITLE = 'Sandbox operator: everything shown is test data';
const TEST_BANNER = 'Test mode: sandbox rounds, bets and settlements of this operator only. Nothing here is live.';

const SIGN_OUT = html`<button type="submit" class="link">Sign out</button>`;

/** Hidden CSRF field for every form of a signed-in page. */
export const csrfField = (token: string): SafeHtml => html`<input type="hidden" name="_csrf" value="${token}">`;

export function page(o: PageOptions): string {
  const nav = o.user
    ? html`<nav aria-label="Dashboard sections"><ul>${NAV.map(
        (n) => html`<li><a href="${n.href}"${o.nav === n.key ? html` aria-current="page"` : ''}>${n.label}</a></li>`,
      )}</ul></nav>`
    : '';
  const account = o.user
    ? html`<div class="account"><span>${o.user.email} · <strong>${o.user.operatorName}</strong>${
        o.user.testMode ? html` <span class="badge badge-test" title="${TEST_TITLE}">TEST</span>` : ''
      }</span>
<form method="post" action="/dashboard/logout">${csrfField(o.user.csrfToken)}${SIGN_OUT}</form></div>`
    : '';
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · Partner dashboard</title>
<link rel="icon" href="${ASSET_PATH}/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${ASSET_PATH}/dashboard.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<p class="brand"><a href="/dashboard">Partner dashboard</a></p>
${account}
${nav}
</header>
<main id="main" tabindex="-1">
<h1>${o.title}</h1>
${o.user?.testMode ? html`<p class="test-data" role="note">${TEST_BANNER}</p>` : ''}
${o.notice ? html`<p class="notice" role="status">${o.notice}</p>` : ''}
${o.error ? html`<p class="error" role="alert">${o.error}</p>` : ''}
${o.body}
</main>
<footer><p>Times are UTC. <a href="/docs">API reference</a></p></footer>
${(o.scripts ?? []).map((s) => html`<script type="module" src="${ASSET_PATH}/${s}"></script>`)}
</body>
</html>`.value;
}

const pad = (n: number): string => String(n).padStart(2, '0');

/** "2025-03-01 14:05:09" (UTC) inside a <time> element. */
export function time(ms: number | null | undefined): SafeHtml {
  if (ms === null || ms === undefined) return html`–`;
  const d = new Date(ms);
  const date = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  const text = `${date} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  return html`<time datetime="${d.toISOString()}">${text}</time>`;
}

/**
 * An id of any length (a player's external id may be 128 characters) in a table cell: cut to the
 * column with an ellipsis, the whole value on hover, and a button that copies it (forms.js).
 */
export function longId(value: string, what: string): SafeHtml {
  return html`<span class="long-id"><span class="long-id-text" title="${value}">${value}</span>\
<button type="button" class="copy-id" data-copy-text="${value}" aria-label="Copy the ${what}">Copy</button></span>`;
}

/** A wide table in a scrollable region that keyboard users can focus and scroll. */
export function tableWrap(label: string, table: SafeHtml): SafeHtml {
  return html`<div class="table-wrap" role="region" aria-label="${label}" tabindex="0">${table}</div>`;
}

/** A short status word with a colour class (the word itself carries the meaning). */
export function badge(status: string): SafeHtml {
  return html`<span class="badge badge-${status.replace(/[^a-z_]/g, '')}">${status.replace(/_/g, ' ')}</span>`;
}

export const short = (id: string, keep = 14): string => (id.length > keep ? `${id.slice(0, keep)}…` : id);
