import type { ComplianceFlag } from '../../compliance/compliance-service';
import { COMPLIANCE_RULES } from '../../webhooks/payloads';
import { html, type SafeHtml } from '../html';
import { isKnownCurrency, money } from '../../money/currency';
import { page, short, tableWrap, time, type PageUser } from './layout';

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

export function compliancePage(o: { user: PageUser; flags: ComplianceFlag[]; rule?: string; player?: string }): string {
  const rows = o.flags.map((f) => {
    const player = f.player
      ? html`<a href="/dashboard/compliance?player=${encodeURIComponent(f.player)}">${f.player}</a>`
      : '–';
    const bet = f.bet_id ? html`<a href="/dashboard/bets/${f.bet_id}" class="mono">${short(f.bet_id, 18)}</a>` : '–';
    return html`<tr><td>${time(f.created_at)}</td><td>${RULE_LABEL[f.rule] ?? f.rule}</td><td>${player}</td>
<td>${bet}</td><td>${f.game ?? '–'}</td><td>${details(f.details)}</td></tr>`;
  });
  const caption =
    'Raised flags, newest first. Thresholds are set per operator; a flag is an observation, never a refusal.';
  const body = html`<form method="get" action="/dashboard/compliance" class="filters">
<p><label for="rule">Rule</label><select id="rule" name="rule"><option value="">Any rule</option>${COMPLIANCE_RULES.map(
    (r) => html`<option value="${r}"${r === o.rule ? html` selected` : ''}>${RULE_LABEL[r] ?? r}</option>`,
  )}</select></p>
<p><label for="player">Player</label><input id="player" name="player" value="${o.player ?? ''}"></p>
<p><button type="submit">Filter</button> <a href="/dashboard/compliance">Clear</a></p></form>
${
  o.flags.length
    ? tableWrap(
        'Compliance flags',
        html`<table><caption>${caption}</caption>
<thead><tr><th scope="col">Raised</th><th scope="col">Rule</th><th scope="col">Player</th><th scope="col">Bet</th>
<th scope="col">Game</th><th scope="col">Details</th></tr></thead>
<tbody>${rows}</tbody></table>`,
      )
    : html`<p>No flags match.</p>`
}`;
  return page({ title: 'Compliance', nav: 'compliance', user: o.user, body });
}
