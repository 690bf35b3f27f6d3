/*
 * Messages carried on the shared-memory rings. The frame header carries
 * the type and the sender's pid; the payload is a msgpack map. Bump
 * RN_IPC_VERSION on every change to a type or its payload: a worker that
 * sees a hello with another version refuses it.
 */
#ifndef RN_MSGTYPES_H
#define RN_MSGTYPES_H

#define RN_IPC_VERSION 1

enum rn_ipc_type {
	RN_IPC_PAD = 0,     /* reserved by the ring for wrap-around padding */
	/*
	 * worker -> controller, once per start: {"v": RN_IPC_VERSION,
	 * "role": str, "index": int, "pid": int}. Lets the controller see
	 * each (re)started worker and check it speaks the same version.
	 */
	RN_IPC_HELLO = 1,
	/* controller -> worker, answer to HELLO: {"v": int, "image": int} */
	RN_IPC_HELLO_ACK = 2,
};

#endif /* RN_MSGTYPES_H */
