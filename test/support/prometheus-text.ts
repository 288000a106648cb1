/**
 * A strict reader of the Prometheus text exposition format (version 0.0.4), so tests can assert
 * that GET /metrics is something a Prometheus server accepts, then read values out of it.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  types: Map<string, string>;
  samples: Sample[];
  /** The value of one series, or undefined when it is absent. */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{((?:${LABEL})(?:,${LABEL})*,?)?\\})? (\\S+)(?: -?\\d+)?$`);
const HELP = new RegExp(`^# HELP (${NAME}) .*$`);
const TYPE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);
const VALUE = /^(?:[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|[+-]?inf|nan)$/i;

/** The family a sample belongs to: histogram and summary samples carry a suffix. */
function familyOf(name: string, types: Map<string, string>): string | undefined {
  if (types.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return types.has(base) ? base : undefined;
}

export function parsePrometheusText(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (const [i, line] of lines.entries()) {
    const where = `line ${i + 1}: ${JSON.stringify(line)}`;
    // Empty lines are allowed between families and ignored.
    if (line === '') continue;
    if (line.startsWith('#')) {
      const type = TYPE.exec(line);
      if (type) {
        if (types.has(type[1]!)) throw new Error(`${where}: second TYPE for ${type[1]}`);
        types.set(type[1]!, type[2]!);
      } else if (!HELP.test(line)) throw new Error(`${where}: not a HELP or TYPE comment`);
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`${where}: not a sample line`);
    if (!VALUE.test(m[3]!)) throw new Error(`${where}: "${m[3]}" is not a sample value`);
    if (!familyOf(m[1]!, types)) throw new Error(`${where}: sample before its TYPE line`);
    const labels: Record<string, string> = {};
    for (const pair of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]!] = pair[2]!.replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1');
    }
    const raw = m[3]!;
    samples.push({
      name: m[1]!,
      labels,
      value: /inf$/i.test(raw) ? (raw.startsWith('-') ? -Infinity : Infinity) : /nan/i.test(raw) ? NaN : Number(raw),
    });
  }
  return {
    types,
    samples,
    value(name, labels = {}) {
      const want = Object.entries(labels);
      return samples.find(
        (s) =>
          s.name === name && want.every(([k, v]) => s.labels[k] === v) && Object.keys(s.labels).length === want.length,
      )?.value;
    },
  };
}
