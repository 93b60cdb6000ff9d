#include <stdio.h>

int main(void) {
	printf("hello from c %d\n", 6 * 7);
	return 0;
}
