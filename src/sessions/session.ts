/** A player's Stock Race session, created by the operator for a player logged in on its side. */
export interface PlayerSession {
  id: string;
  operatorId: string;
  playerRef: string;
  currency: string;
  returnUrl: string;
  createdAt: number;
  expiresAt: number;
}
