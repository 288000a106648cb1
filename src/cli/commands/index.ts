import type { CliCommand } from '../cli-kit';
import { settlementCommands } from './settlements';
import { complianceCommands } from './compliance';
import { webhookCommands } from './webhook';
import { dashboardUserCommands } from './dashboard-user';
import { fairnessCommands } from './fairness';

/** Command groups beyond `operator` (webhooks, settlements, dashboard users) register here. */
export const extraCommands: CliCommand[] = [
  ...settlementCommands,
  ...webhookCommands,
  ...complianceCommands,
  ...dashboardUserCommands,
  ...fairnessCommands,
];
