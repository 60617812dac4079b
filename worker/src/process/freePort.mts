import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * A free TCP port on 127.0.0.1 for a server that binds it later (a child process needs the number on its command
 * line). Drawn below the kernel's ephemeral range (Linux: net.ipv4.ip_local_port_range, 32768–60999 by default), not
 * by listen(0): the port listen(0) picks comes from that range, from which every outgoing connection on the machine
 * takes its local port too, so between this probe and the child's bind any connection could take it and the child
 * fails with "address already in use". Below the range only another listener can. Without a usable range (another OS,
 * or a range starting below 11000) it falls back to the port the OS picks.
 */
export async function freePort(): Promise<number> {
	const low = ephemeralLow();
	if (low !== undefined)
		for (let i = 0; i < 100; i++) {
			const port = 10_000 + Math.floor(Math.random() * (low - 10_000));
			if (await bindable(port)) return port;
		}
	return osPicked();
}

function ephemeralLow(): number | undefined {
	try {
		const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
		return Number.isInteger(low) && low > 11_000 ? low : undefined;
	} catch {
		return undefined;
	}
}

function bindable(port: number): Promise<boolean> {
	return new Promise((resolve) => {
		const s = createServer();
		s.once('error', () => resolve(false));
		s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
	});
}

function osPicked(): Promise<number> {
	return new Promise((resolve, reject) => {
		const s = createServer();
		s.once('error', reject);
		s.listen(0, '127.0.0.1', () => {
			const { port } = s.address() as { port: number };
			s.close(() => resolve(port));
		});
	});
}
