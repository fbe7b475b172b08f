/* One persistent helper thread for SegmentFile.append_checked (issue 3): it runs a large append's
 * CRC/record walk on the second core while the caller's pwrite runs.
 *
 * Built so that the caller never waits for a thread that is not running (this VM is often
 * oversubscribed; an OpenMP fork/join measured 5-8 ms per 1 MiB append at load 8): the caller
 * posts the task, does its write, then tries to claim the task back -- if the helper has not
 * started it, the caller runs it itself; only a task the helper already started is waited for.
 * One task at a time process-wide: a caller that finds the helper busy (another partition's
 * append) gets 0 from fk_helper_post and runs the walk inline. After fork() the child starts its
 * own helper (pid check). If the thread cannot be created everything runs inline.
 *
 * Starting is claimed with a compare-and-swap on `starting` (the pid that claimed it), so two
 * threads posting their first large appends at once never both initialise the mutexes (one of
 * them possibly already locked by the other) or start two helpers: the loser runs inline this
 * time. `pid` is published last, with release/acquire ordering, so a thread that sees it sees
 * the initialised mutexes too.
 */
#ifndef FK_SEGMENT_HELPER_H
#define FK_SEGMENT_HELPER_H
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <unistd.h>

typedef int (*fk_check_fn)(const unsigned char *, Py_ssize_t);

enum { FK_IDLE = 0, FK_POSTED = 1, FK_HELPER_RUNS = 2, FK_DONE = 3, FK_CALLER_RUNS = 4 };

static struct {
    pthread_mutex_t post;      /* held from post to collect: one task at a time */
    pthread_mutex_t mu;        /* with cv: helper sleeps for FK_POSTED, caller for FK_DONE */
    pthread_cond_t cv;
    _Atomic int state;
    fk_check_fn fn;
    const unsigned char *p;
    Py_ssize_t n;
    int result;
    _Atomic pid_t pid;         /* process whose helper runs; 0 = none yet */
    _Atomic pid_t starting;    /* process whose start has been claimed */
    int failed;                /* pthread_create failed: always inline */
} fk_h = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static void *fk_helper_main(void *unused) {
    (void)unused;
    for (;;) {
        int expect = FK_POSTED;
        pthread_mutex_lock(&fk_h.mu);
        while (atomic_load(&fk_h.state) != FK_POSTED)
            pthread_cond_wait(&fk_h.cv, &fk_h.mu);
        pthread_mutex_unlock(&fk_h.mu);
        if (atomic_compare_exchange_strong(&fk_h.state, &expect, FK_HELPER_RUNS)) {
            fk_h.result = fk_h.fn(fk_h.p, fk_h.n);
            pthread_mutex_lock(&fk_h.mu);
            atomic_store(&fk_h.state, FK_DONE);
            pthread_cond_broadcast(&fk_h.cv);
            pthread_mutex_unlock(&fk_h.mu);
        }
    }
    return NULL;
}

static int fk_helper_start(void) {
    pthread_t t;
    pthread_attr_t attr;
    int rc;
    pid_t me = getpid();
    pid_t claimed = atomic_load(&fk_h.starting);
    if (atomic_load_explicit(&fk_h.pid, memory_order_acquire) == me)
        return 1;
    if (fk_h.failed)
        return 0;
    if (claimed == me || !atomic_compare_exchange_strong(&fk_h.starting, &claimed, me))
        return 0;              /* another thread of this process is starting it */
    /* first use, or a forked child: the parent's helper thread does not exist here */
    pthread_mutex_init(&fk_h.post, NULL);
    pthread_mutex_init(&fk_h.mu, NULL);
    pthread_cond_init(&fk_h.cv, NULL);
    atomic_store(&fk_h.state, FK_IDLE);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    rc = pthread_create(&t, &attr, fk_helper_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        fk_h.failed = 1;
        return 0;
    }
    atomic_store_explicit(&fk_h.pid, me, memory_order_release);
    return 1;
}

/* Post fn(p, n) to the helper. 1: posted, call fk_helper_collect; 0: run it yourself. */
static int fk_helper_post(fk_check_fn fn, const unsigned char *p, Py_ssize_t n) {
    if (atomic_load_explicit(&fk_h.pid, memory_order_acquire) != getpid() && !fk_helper_start())
        return 0;
    if (pthread_mutex_trylock(&fk_h.post) != 0)
        return 0;
    fk_h.fn = fn;
    fk_h.p = p;
    fk_h.n = n;
    pthread_mutex_lock(&fk_h.mu);
    atomic_store(&fk_h.state, FK_POSTED);
    pthread_cond_signal(&fk_h.cv);
    pthread_mutex_unlock(&fk_h.mu);
    return 1;
}

/* The posted task's result: run here if the helper has not started it, else wait for it. */
static int fk_helper_collect(void) {
    int expect = FK_POSTED, result;
    if (atomic_compare_exchange_strong(&fk_h.state, &expect, FK_CALLER_RUNS)) {
        result = fk_h.fn(fk_h.p, fk_h.n);
    } else {
        pthread_mutex_lock(&fk_h.mu);
        while (atomic_load(&fk_h.state) != FK_DONE)
            pthread_cond_wait(&fk_h.cv, &fk_h.mu);
        pthread_mutex_unlock(&fk_h.mu);
        result = fk_h.result;
    }
    atomic_store(&fk_h.state, FK_IDLE);
    pthread_mutex_unlock(&fk_h.post);
    return result;
}
#endif
