import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A bearer token the API server accepts from its --token-auth-file. */
export interface StaticUser {
  token: string;
  name: string;
  groups: string[];
}

export interface ControlPlaneCredentials {
  admin: StaticUser;
  saKeyFile: string;
  tokenFile: string;
}

/**
 * Writes the ServiceAccount signing key and the static token file. The admin is in system:masters,
 * which bypasses RBAC; everything khrun itself runs as in tests gets a ServiceAccount instead.
 */
export async function writeCredentials(dir: string): Promise<ControlPlaneCredentials> {
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const saKeyFile = join(dir, 'sa.key');
  await writeFile(saKeyFile, privateKey, { mode: 0o600 });
  const admin: StaticUser = {
    token: randomBytes(24).toString('hex'),
    name: 'khrun-admin',
    groups: ['system:masters'],
  };
  const tokenFile = join(dir, 'tokens.csv');
  await writeFile(tokenFile, `${admin.token},${admin.name},uid-khrun-admin,"${admin.groups.join(',')}"\n`, {
    mode: 0o600,
  });
  return { admin, saKeyFile, tokenFile };
}
