/* One persistent helper thread for SegmentFile.append_checked (issue 3): it runs an append's
 * CRC/record walk on the second core while the caller's pwrite runs.
 *
 * Built so that the caller never waits for a thread that is not running (this VM is often
 * oversubscribed; an OpenMP fork/join measured 5-8 ms per 1 MiB append at load 8): the caller
 * posts the task, does its write, then tries to claim the task back -- if the helper has not
 * started it, the caller runs it itself; only a task the helper already started is waited for.
 * One task at a time process-wide: a caller that finds the helper busy (another partition's
 * append) gets 0 from fk_helper_post and runs the walk inline. After fork() the child starts its
 * own helper (pid check; an atfork handler also clears `hot` in the child, so the child never
 * counts on the parent's spinning helper). If the thread cannot be created everything runs inline.
 *
 * Starting is claimed with a compare-and-swap on `starting` (the pid that claimed it), so two
 * threads posting their first large appends at once never both initialise the mutexes (one of
 * them possibly already locked by the other) or start two helpers: the loser runs inline this
 * time. `pid` is published last, with release/acquire ordering, so a thread that sees it sees
 * the initialised mutexes too.
 *
 * Hot helper (16 KiB appends): waking a sleeping thread (futex wake + scheduling, several us
 * here) costs more than a 16 KiB walk (~0.8 us), so small tasks are only posted to a helper
 * that is awake: after each small task (or kick) it spins on `state` with a CPU pause for at
 * most FK_SPIN_NS, with `hot` set, then clears `hot` and sleeps on the condvar (after a large
 * task it sleeps at once). fk_helper_post_hot
 * posts only while `hot` is set, by one atomic store (no wake); if the helper fell asleep just
 * then, the caller claims the task back after its write as above -- never a wait on a sleeper.
 * A caller that finds it cold validates inline, and kicks it (one futex wake) only when the
 * previous cold small append was within the spin window, and at most once per FK_KICK_GAP_NS:
 * a burst pays one wake, a trickle of appends none (and wakes nothing). Waiting for a started
 * task (fk_helper_collect) also spins up to FK_SPIN_NS before the condvar: a small walk ends
 * well within it. Measured at 16 KiB (SegmentFile.append_checked alone, alternated in one
 * process): pwrite 3.8 us, + 0.75 us inline walk, + 0.45 us handed to a hot helper -- the
 * hand-off's cache-line trips and the second core reading the buffer cost the rest.
 */
#ifndef FK_SEGMENT_HELPER_H
#define FK_SEGMENT_HELPER_H
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

typedef int (*fk_check_fn)(const unsigned char *, Py_ssize_t);

enum { FK_IDLE = 0, FK_POSTED = 1, FK_HELPER_RUNS = 2, FK_DONE = 3, FK_CALLER_RUNS = 4 };

/* How long the helper stays awake after its last task. Back-to-back 16 KiB appends of one
 * partition come ~4-5 us apart (pwrite ~3.4 us + the Python around it), a broker's appends of a
 * busy produce request within ~10 us; 20 us keeps such a burst on a hot helper. It also bounds
 * the waste: an idle broker spins not at all, and a trickle of appends (more than 20 us apart)
 * never wakes the helper for small ones -- at most 20 us of one core per burst or large task. */
#define FK_SPIN_NS 20000LL
/* At most one wake-up per this interval: on an oversubscribed machine a woken helper may not
 * get a core (or shares the caller's, spinning while the caller waits) and falls asleep again
 * unused; kicking it on every cold append would then cost each append a futex wake (~1-2 us).
 * Rate-limited, kicks cost at most a few us per ms (<0.5%) whatever the load. */
#define FK_KICK_GAP_NS 1000000LL

static inline void fk_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline long long fk_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Grouped by who writes what, one cache line group each: the spinning helper polls `state`,
 * and every caller store to a line it polls would pull that line back and forth between the
 * cores (~100-200 ns a trip on this VM, several per append). */
static struct {
    /* the caller's, under `post`: the helper reads fn/p/n/hot_task once per task */
    _Alignas(64) pthread_mutex_t post;   /* held from post to collect: one task at a time */
    fk_check_fn fn;
    const unsigned char *p;
    Py_ssize_t n;
    int hot_task;              /* the posted task came through fk_helper_post_hot */
    int hot_off;               /* 1 (default): small tasks inline, the helper never spins; see set_hot_posting */
    /* counters for tests and benchmarks (relaxed: a few ns against a multi-us append) */
    _Atomic long long n_posts, n_hot_posts, n_waited;
    /* the hand-off itself: what moves between the cores on every task */
    _Alignas(64) _Atomic int state;
    int result;
    _Atomic long long n_helper_ran;
    /* read on every post, written rarely */
    _Alignas(64) _Atomic int hot;   /* helper awake (spinning or running): a post needs no wake */
    _Atomic pid_t pid;         /* process whose helper runs; 0 = none yet */
    _Atomic pid_t starting;    /* process whose start has been claimed */
    int failed;                /* pthread_create failed: always inline */
    int atfork_set;
    /* sleeping and waking */
    /* with cv: the helper sleeps for FK_POSTED or a kick, a caller for FK_DONE */
    _Alignas(64) pthread_mutex_t mu;
    pthread_cond_t cv;
    int kick;                  /* under mu: wake up and spin although nothing is posted */
    long long last_kick_ns;    /* under mu */
    _Atomic long long last_cold_ns;   /* when a small append last found the helper asleep */
    _Atomic long long n_kicks;
} fk_h = {.post = PTHREAD_MUTEX_INITIALIZER, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
        .hot_off = 1};

/* Spin while `state` == `value` (until_equal 0) or until it is (until_equal 1), for at most
 * FK_SPIN_NS; returns the state seen last. The clock is read every 32 pauses (~1 us): cheap
 * against the bound, fine-grained enough. */
static inline int fk_spin(int value, int until_equal) {
    long long deadline = 0;
    unsigned i = 0;
    int s;
    while (((s = atomic_load_explicit(&fk_h.state, memory_order_acquire)) == value) != until_equal) {
        fk_pause();
        if ((++i & 31) == 0) {
            long long now = fk_now_ns();
            if (!deadline)
                deadline = now + FK_SPIN_NS;
            else if (now > deadline)
                break;
        }
    }
    return s;
}

/* Spin until `state` leaves `from`, for at most FK_SPIN_NS; returns the state seen last. */
static inline int fk_spin_while(int from) {
    return fk_spin(from, 0);
}

/* Spin until something is posted, for at most FK_SPIN_NS. 1: something is posted. */
static inline int fk_spin_for_post(void) {
    return fk_spin(FK_POSTED, 1) == FK_POSTED;
}

static void *fk_helper_main(void *unused) {
    int spin = 1;              /* a new thread starts by spinning (a burst started it) */
    (void)unused;
    for (;;) {
        int expect = FK_POSTED;
        if (!spin || !fk_spin_for_post()) {
            pthread_mutex_lock(&fk_h.mu);
            atomic_store(&fk_h.hot, 0);
            while (atomic_load(&fk_h.state) != FK_POSTED && !fk_h.kick)
                pthread_cond_wait(&fk_h.cv, &fk_h.mu);
            fk_h.kick = 0;
            atomic_store(&fk_h.hot, 1);
            pthread_mutex_unlock(&fk_h.mu);
        }
        spin = 1;
        if (atomic_compare_exchange_strong(&fk_h.state, &expect, FK_HELPER_RUNS)) {
            /* after a large task the next one is >100 us away and will wake us anyway: sleep
             * at once rather than spin beside the caller's pwrite (a sibling hyperthread) */
            spin = fk_h.hot_task;
            atomic_fetch_add_explicit(&fk_h.n_helper_ran, 1, memory_order_relaxed);
            fk_h.result = fk_h.fn(fk_h.p, fk_h.n);
            pthread_mutex_lock(&fk_h.mu);
            atomic_store(&fk_h.state, FK_DONE);
            pthread_cond_broadcast(&fk_h.cv);
            pthread_mutex_unlock(&fk_h.mu);
        }
    }
    return NULL;
}

/* In a forked child the parent's helper does not exist: nothing may be posted to it hot. */
static void fk_after_fork_child(void) {
    atomic_store(&fk_h.hot, 0);
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
    if (!fk_h.atfork_set) {    /* inherited by children: registered once */
        pthread_atfork(NULL, NULL, fk_after_fork_child);
        fk_h.atfork_set = 1;
    }
    pthread_mutex_init(&fk_h.post, NULL);
    pthread_mutex_init(&fk_h.mu, NULL);
    pthread_cond_init(&fk_h.cv, NULL);
    atomic_store(&fk_h.state, FK_IDLE);
    fk_h.kick = 0;
    atomic_store(&fk_h.hot, 1);   /* a new thread starts by spinning */
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    rc = pthread_create(&t, &attr, fk_helper_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        atomic_store(&fk_h.hot, 0);
        fk_h.failed = 1;
        return 0;
    }
    atomic_store_explicit(&fk_h.pid, me, memory_order_release);
    return 1;
}

/* Take the one task slot (held until fk_helper_collect) and fill it; 0: another append has it. */
static inline int fk_helper_claim(fk_check_fn fn, const unsigned char *p, Py_ssize_t n, int hot) {
    if (pthread_mutex_trylock(&fk_h.post) != 0)
        return 0;
    fk_h.fn = fn;
    fk_h.p = p;
    fk_h.n = n;
    fk_h.hot_task = hot;
    return 1;
}

/* Post fn(p, n) to the helper. 1: posted, call fk_helper_collect; 0: run it yourself. */
static int fk_helper_post(fk_check_fn fn, const unsigned char *p, Py_ssize_t n) {
    if (atomic_load_explicit(&fk_h.pid, memory_order_acquire) != getpid() && !fk_helper_start())
        return 0;
    if (!fk_helper_claim(fn, p, n, 0))
        return 0;
    atomic_fetch_add_explicit(&fk_h.n_posts, 1, memory_order_relaxed);
    pthread_mutex_lock(&fk_h.mu);
    atomic_store(&fk_h.state, FK_POSTED);
    pthread_cond_signal(&fk_h.cv);
    pthread_mutex_unlock(&fk_h.mu);
    return 1;
}

/* Post a small task only if the helper is awake: no wake-up, no syscall. 1: posted, call
 * fk_helper_collect; 0: run it yourself (the helper is asleep, busy, or not started). `hot`
 * is only ever set by this process's own helper (cleared in a forked child), so no pid check. */
static int fk_helper_post_hot(fk_check_fn fn, const unsigned char *p, Py_ssize_t n) {
    if (!atomic_load_explicit(&fk_h.hot, memory_order_relaxed) || fk_h.hot_off)
        return 0;
    if (!fk_helper_claim(fn, p, n, 1))
        return 0;
    atomic_fetch_add_explicit(&fk_h.n_hot_posts, 1, memory_order_relaxed);
    atomic_store(&fk_h.state, FK_POSTED);
    return 1;
}

/* A small append found the helper cold (fk_helper_post_hot returned 0). If another did so
 * within the spin window, appends are coming in a burst: wake the helper (starting it if this
 * process has none) so the next ones find it hot. Otherwise only note the time. */
static void fk_helper_note_cold(void) {
    long long now;
    if (fk_h.hot_off)
        return;
    now = fk_now_ns();
    long long last = atomic_exchange_explicit(&fk_h.last_cold_ns, now, memory_order_relaxed);
    if (now - last > FK_SPIN_NS || atomic_load_explicit(&fk_h.hot, memory_order_relaxed))
        return;
    if (atomic_load_explicit(&fk_h.pid, memory_order_acquire) != getpid()) {
        fk_helper_start();        /* a new helper starts hot */
        return;
    }
    pthread_mutex_lock(&fk_h.mu);
    if (!atomic_load(&fk_h.hot) && !fk_h.kick && now - fk_h.last_kick_ns >= FK_KICK_GAP_NS) {
        fk_h.last_kick_ns = now;
        fk_h.kick = 1;
        atomic_fetch_add_explicit(&fk_h.n_kicks, 1, memory_order_relaxed);
        pthread_cond_signal(&fk_h.cv);
    }
    pthread_mutex_unlock(&fk_h.mu);
}

/* The posted task's result: run here if the helper has not started it, else wait for it. */
static int fk_helper_collect(void) {
    int expect = FK_POSTED, result;
    if (atomic_compare_exchange_strong(&fk_h.state, &expect, FK_CALLER_RUNS)) {
        result = fk_h.fn(fk_h.p, fk_h.n);
    } else {
        if (atomic_load(&fk_h.state) != FK_DONE)    /* the walk outlasted the write */
            atomic_fetch_add_explicit(&fk_h.n_waited, 1, memory_order_relaxed);
        if (fk_spin_while(FK_HELPER_RUNS) != FK_DONE) {
            pthread_mutex_lock(&fk_h.mu);
            while (atomic_load(&fk_h.state) != FK_DONE)
                pthread_cond_wait(&fk_h.cv, &fk_h.mu);
            pthread_mutex_unlock(&fk_h.mu);
        }
        result = fk_h.result;
    }
    atomic_store(&fk_h.state, FK_IDLE);
    pthread_mutex_unlock(&fk_h.post);
    return result;
}
#endif
