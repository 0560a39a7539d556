// Reads TLS material from a Secret (kube TLS layout: tls.crt, tls.key, ca.crt) and checks it parses.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import type { Secret } from '../api/resources.js';

export interface TlsMaterial {
  certChain?: string;
  privateKey?: string;
  rootCa?: string;
}

export function secretValue(secret: Secret, key: string): string | undefined {
  const plain = secret.spec.stringData?.[key];
  if (plain !== undefined) return plain;
  const encoded = secret.spec.data?.[key];
  return encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8');
}

export function tlsMaterialFromSecret(secret: Secret): TlsMaterial {
  const material: TlsMaterial = {};
  const cert = secretValue(secret, 'tls.crt');
  const key = secretValue(secret, 'tls.key');
  const ca = secretValue(secret, 'ca.crt');
  if (cert !== undefined) material.certChain = cert;
  if (key !== undefined) material.privateKey = key;
  if (ca !== undefined) material.rootCa = ca;
  return material;
}

/** Problems with PEM material, as short messages (empty when everything parses). */
export function checkTlsMaterial(material: TlsMaterial, where: string): string[] {
  const problems: string[] = [];
  if (material.certChain !== undefined && material.privateKey === undefined)
    problems.push(`${where}: tls.crt is set but tls.key is missing`);
  if (material.privateKey !== undefined && material.certChain === undefined)
    problems.push(`${where}: tls.key is set but tls.crt is missing`);
  for (const [label, pem] of [
    ['tls.crt', material.certChain],
    ['ca.crt', material.rootCa],
  ] as const) {
    if (pem === undefined) continue;
    try {
      new X509Certificate(pem);
    } catch {
      problems.push(`${where}: ${label} is not a PEM certificate`);
    }
  }
  if (material.privateKey !== undefined) {
    try {
      createPrivateKey(material.privateKey);
    } catch {
      problems.push(`${where}: tls.key is not a PEM private key`);
    }
  }
  return problems;
}
