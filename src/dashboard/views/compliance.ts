import type { ComplianceFlag } from '../../compliance/compliance-service';
import { COMPLIANCE_RULES } from '../../webhooks/payloads';
import { html, type SafeHtml } from '../html';
import { page, short, tableWrap, time, type PageUser } from './layout';

const RULE_LABEL: Record<string, string> = {
  large_stake: 'Large stake',
  large_payout: 'Large payout',
  bet_velocity: 'Bet velocity',
  machine_timing: 'Machine-like cash-out timing',
  session_multi_place: 'Session used from several places',
};

/** Each measurement the rule recorded, as "name: value" lines. */
function details(d: Record<string, unknown>): SafeHtml {
  const entries = Object.entries(d);
  if (entries.length === 0) return html`–`;
  const items = entries.map(
    ([k, v]) => html`<dt>${k.replace(/_/g, ' ')}</dt><dd>${typeof v === 'object' ? JSON.stringify(v) : String(v)}</dd>`,
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
