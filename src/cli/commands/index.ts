import type { CliCommand } from '../cli-kit';

/** Command groups beyond `operator` (webhooks, settlements, dashboard users) register here. */
export const extraCommands: CliCommand[] = [];
