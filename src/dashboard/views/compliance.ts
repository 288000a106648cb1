import type { ListedFlag } from '../../compliance/compliance-service';
import { COMPLIANCE_RULES } from '../../webhooks/payloads';
import { html, type SafeHtml } from '../html';
import { isKnownCurrency, money } from '../../money/currency';
import { badge, csrfField, page, short, tableWrap, time, type PageUser } from './layout';

const RULE_LABEL: Record<string, string> = {
  large_stake: 'Large stake',
  large_payout: 'Large payout',
  bet_velocity: 'Bet velocity',
  machine_timing: 'Machine-like cash-out timing',
  session_multi_place: 'Session used from several places',
};

// Measurements that are money in the bet's units: minor units of its currency, or Crash's plain units.
const MONEY_MEASUREMENTS = new Set(['amount', 'payout', 'threshold']);

/**
 * One measurement as a person reads it. Money of a bet with a currency keeps the minor units the
 * rule measured (the thresholds are set in them) and says what they are: "50000 minor units (500.00 EUR)",
 * never a bare 50000 that reads as fifty thousand euros.
 */
function measurement(key: string, value: unknown, currency: unknown): string {
  if (typeof value === 'object') return JSON.stringify(value);
  if (MONEY_MEASUREMENTS.has(key) && typeof currency === 'string' && isKnownCurrency(currency)) {
    if (Number.isSafeInteger(value)) return `${String(value)} minor units (${money({ currency }, value as number)})`;
  }
  return String(value);
}

/** Each measurement the rule recorded, as "name: value" lines. */
function details(d: Record<string, unknown>): SafeHtml {
  const entries = Object.entries(d);
  if (entries.length === 0) return html`–`;
  const items = entries.map(
    ([k, v]) => html`<dt>${k.replace(/_/g, ' ')}</dt><dd>${measurement(k, v, d.currency)}</dd>`,
  );
  return html`<dl class="details">${items}</dl>`;
}

/** The list's filters, as the page's query string carries them. */
export interface FlagListFilters {
  rule?: string;
  player?: string;
  /** open | acknowledged; absent: both. */
  state?: string;
}

const STATE_LABEL: Record<string, string> = { open: 'Open only', acknowledged: 'Acknowledged only' };

/** The list's address with these filters and, for a later page, its cursor (the last flag of the page before). */
export function flagListHref(f: FlagListFilters, startingAfter?: string): string {
  const q = new URLSearchParams();
  if (f.rule) q.set('rule', f.rule);
  if (f.player) q.set('player', f.player);
  if (f.state) q.set('state', f.state);
  if (startingAfter) q.set('starting_after', startingAfter);
  const query = q.toString();
  return query ? `/dashboard/compliance?${query}` : '/dashboard/compliance';
}

/**
 * Open: an Acknowledge button, whose form carries the page's filters and cursor so the list comes
 * back where it was. Acknowledged: who did it and when.
 */
function stateCell(f: ListedFlag, o: { csrf: string; filters: FlagListFilters; startingAfter?: string }): SafeHtml {
  if (f.acknowledged_at !== null) {
    return html`${badge('acknowledged')} by ${f.acknowledged_by ?? '–'}, ${time(f.acknowledged_at)}`;
  }
  const keep = { ...o.filters, starting_after: o.startingAfter };
  const hidden = Object.entries(keep).flatMap(([name, value]) =>
    value ? [html`<input type="hidden" name="${name}" value="${value}">`] : [],
  );
  const action = `/dashboard/compliance/${encodeURIComponent(f.flag_id)}/acknowledge`;
  const which = html`<span class="sr-only"> flag ${f.flag_id}</span>`;
  return html`${badge('open')} <form method="post" action="${action}" class="inline">${csrfField(o.csrf)}${hidden}
<button type="submit">Acknowledge${which}</button></form>`;
}

export function compliancePage(o: {
  user: PageUser;
  flags: ListedFlag[];
  filters: FlagListFilters;
  /** The cursor this page was asked with (absent: the newest page). */
  startingAfter?: string;
  /** Whether flags older than this page's last match the filters: the page links to them. */
  hasOlder: boolean;
  pageSize: number;
  notice?: string | null;
}): string {
  const f = o.filters;
  const rows = o.flags.map((flag) => {
    const player = flag.player
      ? html`<a href="${flagListHref({ player: flag.player })}" class="long-id-text" title="${flag.player}">\
${flag.player}</a>`
      : '–';
    const bet = flag.bet_id
      ? html`<a href="/dashboard/bets/${flag.bet_id}" class="mono">${short(flag.bet_id, 18)}</a>`
      : '–';
    const state = stateCell(flag, { csrf: o.user.csrfToken, filters: f, startingAfter: o.startingAfter });
    // The row's id is the flag's: an address can point at it (#flag_…), and the CLI and API take it.
    const rule = RULE_LABEL[flag.rule] ?? flag.rule;
    return html`<tr id="${flag.flag_id}"><td>${time(flag.created_at)}</td><td>${rule}</td><td>${player}</td>
<td>${bet}</td><td>${flag.game ?? '–'}</td><td>${details(flag.details)}</td><td>${state}</td></tr>`;
  });
  const caption =
    `Raised flags, newest first, ${o.pageSize} a page. Thresholds are set per operator; ` +
    'a flag is an observation, never a refusal.';
  const last = o.flags.at(-1);
  const links = [
    o.startingAfter ? html`<a href="${flagListHref(f)}">Newest flags</a>` : '',
    o.hasOlder && last ? html`<a href="${flagListHref(f, last.flag_id)}" rel="next">Older flags</a>` : '',
  ];
  const pager = o.startingAfter || o.hasOlder ? html`<p class="pager">${links[0]} ${links[1]}</p>` : '';
  const states = Object.entries(STATE_LABEL).map(
    ([v, label]) => html`<option value="${v}"${v === f.state ? html` selected` : ''}>${label}</option>`,
  );
  const body = html`<form method="get" action="/dashboard/compliance" class="filters">
<p><label for="rule">Rule</label><select id="rule" name="rule"><option value="">Any rule</option>${COMPLIANCE_RULES.map(
    (r) => html`<option value="${r}"${r === f.rule ? html` selected` : ''}>${RULE_LABEL[r] ?? r}</option>`,
  )}</select></p>
<p><label for="player">Player</label><input id="player" name="player" value="${f.player ?? ''}"></p>
<p><label for="state">Status</label><select id="state" name="state">
<option value="">Open and acknowledged</option>${states}</select></p>
<p><button type="submit">Filter</button> <a href="/dashboard/compliance">Clear</a></p></form>
${
  o.flags.length
    ? tableWrap(
        'Compliance flags',
        html`<table><caption>${caption}</caption>
<thead><tr><th scope="col">Raised</th><th scope="col">Rule</th><th scope="col">Player</th><th scope="col">Bet</th>
<th scope="col">Game</th><th scope="col">Details</th><th scope="col">Status</th></tr></thead>
<tbody>${rows}</tbody></table>`,
      )
    : html`<p>No flags match.</p>`
}
${pager}`;
  return page({ title: 'Compliance', nav: 'compliance', user: o.user, body, notice: o.notice });
}
