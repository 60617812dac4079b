import { Client, Connection } from '@temporalio/client';
import { dataConverterFor, keysFromEnv } from '../temporal/codec.mts';
import { connectionOptions, type WorkerConfig } from './config.mts';
import { explainConnectFailure } from './tlsProbe.mts';
import { connectWithBearer } from './temporalToken.mts';

/** The CLI's Temporal client: the configured connection, and the payload codec when keys are configured. */
export async function temporalClient(t: WorkerConfig['temporal']): Promise<Client> {
	const opts = connectionOptions(t);
	let connection: Connection;
	try {
		connection = await connectWithBearer((o) => Connection.connect(o), opts, t.token);
	} catch (e) {
		if ((e as Error).message.startsWith('Temporal token:')) throw e;
		// One line naming the setting (the client library only says "Failed to connect before the deadline").
		throw new Error(await explainConnectFailure(t.address, opts.tls, t.from ?? {}, (e as Error).message));
	}
	// The payload codec when keys are configured: sealed values (ID tokens, tenant tokens) leave this process encrypted.
	const dataConverter = dataConverterFor(keysFromEnv());
	return new Client({ connection, namespace: t.namespace, ...(dataConverter ? { dataConverter } : {}) });
}
