/* The calling thread's own OpenMP thread count (threads.c). */
#ifndef PTREG_CORE_THREADS_H
#define PTREG_CORE_THREADS_H

/* n > 0: the calling thread's calls use n threads, whatever
 * ptreg_set_num_threads says for the process; 0: they follow it again.
 * Returns the value it replaces. The tuner times its candidates with it,
 * so that it neither changes other threads' calls nor races a caller
 * setting the process's count. */
int core_thread_override(int n);

#endif
