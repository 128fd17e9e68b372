// Secret material: key generation, hashing for lookup indexes, AES-256-GCM sealing of key values,
// and the master secret. Pure crypto, no storage.
import { createCipheriv, createDecipheriv, createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const KEY_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const KEY_BODY_LENGTH = 48;

/** `sk-` + 48 chars of [0-9A-Za-z] from a CSPRNG (randomInt is uniform, no modulo bias). */
export function generateApiKey(): string {
  let body = '';
  for (let index = 0; index < KEY_BODY_LENGTH; index += 1) body += KEY_ALPHABET[randomInt(KEY_ALPHABET.length)];
  return `sk-${body}`;
}

/** Model calls accept the key with or without `sk-`; the index is over the bare body. */
export function apiKeyDigest(presented: string): Buffer {
  const body = presented.startsWith('sk-') ? presented.slice(3) : presented;
  return createHash('sha256').update(body).digest();
}

export function maskKey(key: string): string {
  const body = key.startsWith('sk-') ? key.slice(3) : key;
  return `sk-${body.slice(0, 4)}${'*'.repeat(10)}${body.slice(-4)}`;
}

export function generateAccessToken(): string {
  return `tga-${randomBytes(24).toString('base64url')}`;
}

export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

export function constantTimeEqual(left: Buffer, right: Buffer): boolean {
  return left.length === right.length && timingSafeEqual(left, right);
}

export interface SealedValue { iv: Uint8Array; tag: Uint8Array; data: Uint8Array }

export function seal(masterKey: Buffer, plaintext: string): SealedValue {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv);
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { iv, tag: cipher.getAuthTag(), data };
}

export function unseal(masterKey: Buffer, sealed: SealedValue): string {
  const decipher = createDecipheriv('aes-256-gcm', masterKey, Buffer.from(sealed.iv));
  decipher.setAuthTag(Buffer.from(sealed.tag));
  return Buffer.concat([decipher.update(Buffer.from(sealed.data)), decipher.final()]).toString('utf8');
}

/**
 * The master secret: TOLLGATE_SECRET when given (any length; stretched with SHA-256), else
 * `<dataDir>/secret.key`, created 0600 with 32 random bytes at first start.
 */
export function loadMasterKey(dataDir: string, secret: string | undefined): Buffer {
  if (secret) return createHash('sha256').update(secret).digest();
  const path = join(dataDir, 'secret.key');
  if (!existsSync(path)) {
    try {
      writeFileSync(path, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  chmodSync(path, 0o600);
  const text = readFileSync(path, 'utf8').trim();
  const bytes = Buffer.from(text, 'hex');
  if (bytes.length !== 32) throw new Error(`${path} must hold 64 hex characters`);
  return bytes;
}
