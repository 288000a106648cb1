import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { DomainError } from '../errors/codes';
import {
  DEFAULT_OPERATOR_SETTINGS,
  MERGED_SECTIONS,
  OperatorSettingsSchema,
  type OperatorSettings,
  type OperatorSettingsPatch,
} from './operator';

/*
 * The one check of operator settings (the schema is OperatorSettingsSchema in ./operator.ts). Every
 * write goes through applySettingsPatch, so the CLI, the services and tests get the same rule; every
 * read of stored settings goes through settingsFromStore, which never lets a bad stored value reach
 * the games (a Crash tick comparing against a string cap wedged the shared live round).
 */
const validator = Compile(OperatorSettingsSchema);
type SectionKey = keyof OperatorSettings;
const SECTIONS = Object.keys(OperatorSettingsSchema.properties) as SectionKey[];
const sectionValidators = Object.fromEntries(
  SECTIONS.map((key) => [key, Compile(OperatorSettingsSchema.properties[key] as TSchema)]),
) as Record<SectionKey, ReturnType<typeof Compile>>;

/** The schema's complaints about a whole settings object, one readable line per field; empty when valid. */
export function settingsProblems(value: unknown): string[] {
  if (validator.Check(value)) return [];
  const found = new Map<string, { message: string; weak: boolean }>();
  const add = (path: string, message: string, weak = false) => {
    const seen = found.get(path);
    if (!seen || (seen.weak && !weak)) found.set(path, { message, weak });
  };
  for (const e of validator.Errors(value)) {
    const unknownKeyAt = (path: string) => {
      const parent = parentPath(path);
      const described = describedSchemaAt(e.schemaPath.replace(/\/additionalProperties$/, ''));
      const rule = described ? `: ${fieldName(value, parent)} must be ${described.schema.description}` : '';
      add(path, `${fieldName(value, path)} is not a known key${rule}`);
    };
    if (e.keyword === 'additionalProperties') {
      const keys = (e.params as { additionalProperties?: string[] }).additionalProperties ?? [];
      for (const key of keys) unknownKeyAt(`${e.instancePath}/${escapePointer(key)}`);
      continue;
    }
    if (e.keyword === 'boolean' && e.schemaPath.endsWith('/additionalProperties')) {
      unknownKeyAt(e.instancePath);
      continue;
    }
    const got = `, got ${show(valueAt(value, e.instancePath))}`;
    if (e.keyword === '~refine') {
      add(e.instancePath, `${fieldName(value, e.instancePath)} ${e.message}${got}`);
      continue;
    }
    const described = describedSchemaAt(e.schemaPath);
    const what = described ? described.schema.description : e.message;
    const missing = e.keyword === 'required' ? ` (${e.message})` : '';
    // A complaint borrowed from an enclosing schema (a branch of rate_limit's null-or-object) gives way
    // to a precise one: about a field inside it, or a missing field.
    const weak = e.keyword === 'anyOf' || !described || (described.walkedUp && e.keyword !== 'required');
    add(e.instancePath, `${fieldName(value, e.instancePath)} must be ${what}${missing}${got}`, weak);
  }
  const paths = [...found.keys()];
  return [...found]
    .filter(([path, p]) => !p.weak || !paths.some((other) => other.startsWith(`${path}/`)))
    .map(([, p]) => p.message);
}

/** The settings as they are, or VALIDATION_FAILED naming every offending field and what it must be. */
export function checkSettings(value: unknown): OperatorSettings {
  const problems = settingsProblems(value);
  if (problems.length > 0) {
    throw new DomainError('VALIDATION_FAILED', `invalid operator settings: ${problems.join('; ')}`, { problems });
  }
  return value as OperatorSettings;
}

/**
 * The settings a patch leads to, checked whole: `crash`, `stock_race` and `compliance` take the fields
 * given over the current ones; the other keys replace theirs. Throws VALIDATION_FAILED and stores
 * nothing when the result (or the patch itself) is invalid.
 */
export function applySettingsPatch(current: OperatorSettings, patch: OperatorSettingsPatch): OperatorSettings {
  if (!isPlainObject(patch)) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `invalid operator settings: the change must be a JSON object, got ${show(patch)}`,
    );
  }
  const next: Record<string, unknown> = { ...current };
  for (const [key, given] of Object.entries(patch)) {
    if (given === undefined) continue;
    const section = (MERGED_SECTIONS as readonly string[]).includes(key) && isPlainObject(given);
    const value = section ? { ...(current[key as SectionKey] as object), ...given } : given;
    // defineProperty, not assignment: a JSON key "__proto__" must stay a (refused) key, not a prototype.
    Object.defineProperty(next, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return checkSettings(next);
}

/**
 * Stored settings as the games may use them. Missing keys and fields take their defaults (settings
 * stored before a field existed). Settings that fail the schema (stored before it was enforced, or
 * edited by hand) never reach a game: each invalid top-level key falls back to its default, unknown
 * keys are dropped, and `report` hears what was wrong.
 */
export function settingsFromStore(json: string, report?: (problems: string[]) => void): OperatorSettings {
  let stored: unknown;
  try {
    stored = JSON.parse(json);
  } catch {
    report?.(['stored settings are not JSON']);
    return DEFAULT_OPERATOR_SETTINGS;
  }
  if (!isPlainObject(stored)) {
    report?.([`stored settings must be an object, got ${show(stored)}`]);
    return DEFAULT_OPERATOR_SETTINGS;
  }
  const filled: Record<string, unknown> = { ...DEFAULT_OPERATOR_SETTINGS, ...stored };
  for (const key of MERGED_SECTIONS) {
    const given = stored[key];
    if (isPlainObject(given)) filled[key] = { ...DEFAULT_OPERATOR_SETTINGS[key], ...given };
  }
  if (validator.Check(filled)) return filled as OperatorSettings;
  report?.(settingsProblems(filled));
  const repaired: Record<string, unknown> = {};
  for (const key of SECTIONS) {
    repaired[key] = sectionValidators[key].Check(filled[key]) ? filled[key] : DEFAULT_OPERATOR_SETTINGS[key];
  }
  return repaired as OperatorSettings;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The nearest schema on the way up from a schema path that says what its value must be. */
function describedSchemaAt(
  schemaPath: string,
): { schema: TSchema & { description: string }; walkedUp: boolean } | null {
  const segments = schemaPath.replace(/^#/, '').split('/').filter(Boolean).map(unescapePointer);
  for (let n = segments.length; n >= 0; n--) {
    let node: unknown = OperatorSettingsSchema;
    for (const segment of segments.slice(0, n)) node = (node as Record<string, unknown> | undefined)?.[segment];
    const description = (node as { description?: unknown } | undefined)?.description;
    if (typeof description === 'string') {
      return { schema: node as TSchema & { description: string }, walkedUp: n < segments.length };
    }
  }
  return null;
}

function pathSegments(instancePath: string): string[] {
  return instancePath.split('/').slice(1).map(unescapePointer);
}

function valueAt(root: unknown, instancePath: string): unknown {
  let node = root;
  for (const segment of pathSegments(instancePath)) {
    node = isPlainObject(node) || Array.isArray(node) ? (node as Record<string, unknown>)[segment] : undefined;
  }
  return node;
}

/** `stake_limits.EUR.min`, `currencies[1]`; the whole object is `settings`. */
function fieldName(root: unknown, instancePath: string): string {
  let name = '';
  let node = root;
  for (const segment of pathSegments(instancePath)) {
    name += Array.isArray(node) ? `[${segment}]` : name ? `.${segment}` : segment;
    node = isPlainObject(node) || Array.isArray(node) ? (node as Record<string, unknown>)[segment] : undefined;
  }
  return name || 'settings';
}

function parentPath(instancePath: string): string {
  return instancePath.slice(0, instancePath.lastIndexOf('/'));
}

function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}
