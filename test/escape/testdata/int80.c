/* Makes an i386 system call (getpid, number 20) through int 0x80 from a 64-bit
 * process and prints its result: a seccomp filter that checks only x86-64 numbers
 * would let every i386 call through. */
#include <stdio.h>

int main(void) {
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
	printf("int80 getpid %ld\n", r);
	return 0;
}
