import { isIP } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { Sources, TlsMaterial } from './temporalEnv.mts';

/**
 * Why a Temporal connection failed, as one line naming the setting to fix. The SDK's own errors say little (the
 * client's gRPC library only "Failed to connect before the deadline"), so after a failure we open one TLS handshake
 * ourselves with the same settings and read what the server said. No request is sent; nothing secret is printed.
 */
export async function explainConnectFailure(
	address: string,
	tls: TlsMaterial | boolean | undefined,
	from: Sources,
	original: string,
	timeoutMs = 5000,
): Promise<string> {
	const addrName = from.address ?? 'TEMPORAL_ADDRESS (temporal.address)';
	const { host, port } = splitAddress(address);
	if (!host || !port) return `${addrName} ${address}: must be host:port`;
	const r = await handshake(host, port, tls, timeoutMs);
	const tlsName = from.tls ?? (from.apiKey ? `${from.apiKey} (an API key turns TLS on)` : 'TEMPORAL_TLS');
	switch (r.kind) {
		case 'refused':
			return `${addrName} ${address}: cannot connect — nothing listens there (${r.code})`;
		case 'plainServer':
			return `${addrName} ${address}: does not speak TLS, but TLS is on (${tlsName})`;
		case 'tlsServer':
			return `${tlsName}: TLS is off but ${address} speaks TLS (set TEMPORAL_TLS=true or the TEMPORAL_TLS_* files)`;
		case 'name':
			return `${from.serverName ?? `TEMPORAL_TLS_SERVER_NAME (the server is addressed as ${host})`}: the server's certificate is for ${r.detail}, not this name`;
		case 'ca':
			return `${from.ca ?? 'TEMPORAL_TLS_SERVER_CA_CERT_PATH'}: the server's certificate is not signed by this CA (${r.detail})`;
		case 'certRequired':
			return `${from.cert ?? 'TEMPORAL_TLS_CLIENT_CERT_PATH'}: the server requires a client certificate (mutual TLS) and none is set`;
		case 'certRefused':
			return `${from.cert ?? 'TEMPORAL_TLS_CLIENT_CERT_PATH'}: the server refused the client certificate (${r.detail})`;
		default:
			return `${addrName} ${address}: cannot connect — ${original}`;
	}
}

function splitAddress(a: string): { host?: string; port?: number } {
	const m = /^\[?([^\]]*?)\]?:(\d{1,5})$/.exec(a.trim());
	return m ? { host: m[1], port: Number(m[2]) } : {};
}

type Outcome =
	| { kind: 'refused'; code: string }
	| { kind: 'plainServer' | 'tlsServer' | 'certRequired' | 'ok' | 'unknown' }
	| { kind: 'name' | 'ca' | 'certRefused'; detail: string };

const CA_CODES = [
	'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
	'SELF_SIGNED_CERT_IN_CHAIN',
	'DEPTH_ZERO_SELF_SIGNED_CERT',
	'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
	'UNABLE_TO_GET_ISSUER_CERT',
	'CERT_UNTRUSTED',
];

function handshake(
	host: string,
	port: number,
	tls: TlsMaterial | boolean | undefined,
	timeoutMs: number,
): Promise<Outcome> {
	const material = typeof tls === 'object' ? tls : {};
	const on = tls !== undefined && tls !== false;
	return new Promise((resolve) => {
		let done = false;
		const finish = (o: Outcome) => {
			if (done) return;
			done = true;
			clearTimeout(timer);
			sock.destroy();
			resolve(o);
		};
		const servername = material.serverNameOverride ?? (isIP(host) ? undefined : host);
		// With TLS off we still try a handshake: if it gets anywhere, the server is a TLS port.
		const sock = tlsConnect({
			host,
			port,
			servername,
			ALPNProtocols: ['h2'],
			ca: material.serverRootCACertificate,
			cert: material.clientCertPair?.crt,
			key: material.clientCertPair?.key,
			rejectUnauthorized: on,
		});
		const timer = setTimeout(() => finish({ kind: 'unknown' }), timeoutMs);
		sock.on('secureConnect', () => {
			if (!on) return finish({ kind: 'tlsServer' });
			// TLS 1.3: the server judges the client certificate after the handshake; its alert arrives next.
			setTimeout(() => finish({ kind: 'ok' }), 500);
			sock.resume();
		});
		sock.on('error', (e: NodeJS.ErrnoException & { cert?: { subjectaltname?: string } }) => {
			const code = String(e.code ?? '');
			const msg = String(e.message);
			if (code === 'ECONNREFUSED' || code === 'EHOSTUNREACH' || code === 'ENOTFOUND')
				return finish({ kind: 'refused', code });
			if (!on) return finish(/alert|certificate/i.test(msg) ? { kind: 'tlsServer' } : { kind: 'unknown' });
			if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
				return finish({ kind: 'name', detail: e.cert?.subjectaltname || 'other names' });
			if (CA_CODES.includes(code)) return finish({ kind: 'ca', detail: code });
			if (/CERTIFICATE_REQUIRED/i.test(code) || /certificate required/i.test(msg))
				return finish({ kind: 'certRequired' });
			if (
				/UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN|UNSUPPORTED_CERTIFICATE/i.test(code) ||
				/unknown ca|bad certificate/i.test(msg)
			)
				return finish({ kind: 'certRefused', detail: /alert [a-z ]+/i.exec(msg)?.[0] ?? code });
			if (
				code === 'ECONNRESET' ||
				/wrong version number|packet length too long|unexpected eof|socket disconnected/i.test(msg) ||
				code === 'EPROTO'
			)
				return finish({ kind: 'plainServer' });
			finish({ kind: 'unknown' });
		});
		sock.on('close', () => finish({ kind: 'unknown' }));
	});
}
