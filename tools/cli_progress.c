/*
 * cli_progress.c: one progress line on stderr for work that takes a while
 * (`rnnc compare`): after a second of one step it shows what runs and for
 * how long, rewritten in place, and is erased when the step ends.  Only on
 * a terminal, and never with --quiet, so logs and pipes see nothing of it.
 * A helper thread keeps the clock while the step runs in the caller's.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "tools/cli.h"

#define SHOW_AFTER_MS 1000.0
#define EVERY_MS 200

static struct {
    bool enabled;
    bool running, stop, shown;
    char what[200];
    double t0;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

bool cli_progress_enable(bool quiet)
{
    g.enabled = !quiet && isatty(STDERR_FILENO);
    return g.enabled;
}

static void *tick(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g.mu);
    while (!g.stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += EVERY_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&g.cv, &g.mu, &until);
        double ms = cm_now_ms() - g.t0;
        if (!g.stop && ms >= SHOW_AFTER_MS) {
            fprintf(stderr, "\r%s ... %.1f s\033[K", g.what, ms / 1000.0);
            fflush(stderr);
            g.shown = true;
        }
    }
    pthread_mutex_unlock(&g.mu);
    return NULL;
}

void cli_progress_begin(const char *what)
{
    cli_progress_end();
    if (!g.enabled)
        return;
    snprintf(g.what, sizeof g.what, "%s", what);
    g.t0 = cm_now_ms();
    g.stop = g.shown = false;
    g.running = pthread_create(&g.thread, NULL, tick, NULL) == 0;
}

void cli_progress_end(void)
{
    if (!g.running)
        return;
    pthread_mutex_lock(&g.mu);
    g.stop = true;
    pthread_cond_signal(&g.cv);
    pthread_mutex_unlock(&g.mu);
    pthread_join(g.thread, NULL);
    g.running = false;
    if (g.shown) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
}
