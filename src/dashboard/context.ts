import type { FastifyRequest } from 'fastify';
import type { Operator } from '../operators/operator';
import type { DashboardSession } from '../dashboard-users/dashboard-auth';
import type { PageUser } from './views/layout';

declare module 'fastify' {
  interface FastifyRequest {
    dashboard?: DashboardContext;
  }
}

/** Who is signed in, for which operator: set by the dashboard's authentication hook. */
export interface DashboardContext {
  session: DashboardSession;
  operator: Operator;
  user: PageUser;
  /** Asked again while a live feed is open: the session not signed out or expired, the operator enabled. */
  stillSignedIn(): Promise<boolean>;
}

export const ctx = (req: FastifyRequest): DashboardContext => {
  if (!req.dashboard) throw new Error('dashboard route reached without a session');
  return req.dashboard;
};
