import type { DashboardUser } from '../../dashboard-users/dashboard-auth';
import { type CliCommand, operatorFilter } from '../cli-kit';

const present = (u: DashboardUser): Record<string, unknown> => ({
  user_id: u.id,
  operator_id: u.operatorId,
  email: u.email,
  created_at: u.createdAt,
});

/** Partner dashboard sign-ins: one user belongs to one operator and sees only that operator's data. */
export const dashboardUserCommands: CliCommand[] = [
  {
    path: ['dashboard-user', 'create'],
    summary: 'Create a partner dashboard user for an operator (the password is stored as an Argon2id hash).',
    options: {
      operator: { type: 'string', required: true, description: 'the operator id (op_…)' },
      email: { type: 'string', required: true, description: 'sign-in email, unique across operators' },
      password: { type: 'string', required: true, description: 'at least 12 characters' },
    },
    async run(app, v) {
      await app.services.operators.get(String(v.operator));
      const input = { operatorId: String(v.operator), email: String(v.email), password: String(v.password) };
      return present(await app.services.dashboardUsers.createUser(input));
    },
  },
  {
    path: ['dashboard-user', 'list'],
    summary: 'List dashboard users (optionally of one operator).',
    options: { operator: { type: 'string', description: 'only this operator (op_…)' } },
    async run(app, v) {
      // An empty --operator used to list every operator's users, a mistyped one none: both are refused.
      const operatorId = await operatorFilter(app, v.operator);
      return { users: (await app.services.dashboardUsers.listUsers(operatorId)).map(present) };
    },
  },
  {
    path: ['dashboard-user', 'delete'],
    summary: 'Delete a dashboard user and end its sessions.',
    options: { email: { type: 'string', required: true, description: "the user's email" } },
    async run(app, v) {
      return { deleted: present(await app.services.dashboardUsers.deleteUser(String(v.email))) };
    },
  },
];
