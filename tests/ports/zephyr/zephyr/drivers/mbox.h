/* zephyr/drivers/mbox.h — a behavioural model of Zephyr's MBOX API in signalling mode for the
   port tests (splitcore tests)

   A channel of a device: mbox_send_dt latches a signal (-EBUSY while one is still
   undelivered); the model's interrupt thread (pgz_mbox_start) delivers latched signals of
   enabled channels by calling the registered callback, as the driver's ISR would. A signal
   that arrives while its channel is disabled waits until it is enabled. */
#ifndef ZEPHYR_INCLUDE_DRIVERS_MBOX_H_
#define ZEPHYR_INCLUDE_DRIVERS_MBOX_H_

#include <zephyr/kernel.h>

#define PGZ_CHANNELS 8

typedef uint32_t mbox_channel_id_t;
struct mbox_msg {
    const void *data;
    size_t size;
};
struct device;
typedef void (*mbox_callback_t)(const struct device *dev, mbox_channel_id_t channel_id, void *user_data,
                                struct mbox_msg *data);
struct device {
    const char *name;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    uint32_t latched, enabled;
    mbox_callback_t cb[PGZ_CHANNELS];
    void *user[PGZ_CHANNELS];
    uint64_t sends, busy, delivered;
    int stop;
    pthread_t thread;
};
struct mbox_dt_spec {
    const struct device *dev;
    mbox_channel_id_t channel_id;
};

static inline struct device *pgz_dev(const struct device *d)
{
    return (struct device *)(uintptr_t)d;
}

static inline int mbox_send_dt(const struct mbox_dt_spec *spec, const struct mbox_msg *msg)
{
    struct device *d = pgz_dev(spec->dev);
    int rc = 0;
    if (msg || spec->channel_id >= PGZ_CHANNELS) return -EINVAL;
    pthread_mutex_lock(&d->lock);
    if (d->latched >> spec->channel_id & 1u) {
        d->busy++;
        rc = -EBUSY;
    } else {
        d->latched |= 1u << spec->channel_id;
        d->sends++;
        pthread_cond_signal(&d->cv);
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

static inline int mbox_register_callback_dt(const struct mbox_dt_spec *spec, mbox_callback_t cb, void *user)
{
    struct device *d = pgz_dev(spec->dev);
    if (spec->channel_id >= PGZ_CHANNELS) return -EINVAL;
    pthread_mutex_lock(&d->lock);
    d->cb[spec->channel_id] = cb;
    d->user[spec->channel_id] = user;
    pthread_mutex_unlock(&d->lock);
    return 0;
}

static inline int mbox_set_enabled_dt(const struct mbox_dt_spec *spec, bool enabled)
{
    struct device *d = pgz_dev(spec->dev);
    uint32_t bit = 1u << spec->channel_id;
    if (spec->channel_id >= PGZ_CHANNELS) return -EINVAL;
    pthread_mutex_lock(&d->lock);
    if (!!(d->enabled & bit) == enabled) {
        pthread_mutex_unlock(&d->lock);
        return -EALREADY;
    }
    d->enabled = enabled ? d->enabled | bit : d->enabled & ~bit;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->lock);
    return 0;
}

/* The interrupt thread of device d. */
static inline void *pgz_mbox_thread(void *arg)
{
    struct device *d = (struct device *)arg;
    pthread_mutex_lock(&d->lock);
    while (!d->stop || (d->latched & d->enabled)) { /* signals sent before the stop are delivered */
        uint32_t ready = d->latched & d->enabled;
        mbox_channel_id_t ch;
        if (!ready) {
            pthread_cond_wait(&d->cv, &d->lock);
            continue;
        }
        ch = (mbox_channel_id_t)__builtin_ctz(ready);
        d->latched &= ~(1u << ch);
        d->delivered++;
        pthread_mutex_unlock(&d->lock);
        if (d->cb[ch]) d->cb[ch](d, ch, d->user[ch], NULL);
        pthread_mutex_lock(&d->lock);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

static inline void pgz_mbox_start(struct device *d, const char *name)
{
    memset(d, 0, sizeof *d);
    d->name = name;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->cv, NULL);
    pthread_create(&d->thread, NULL, pgz_mbox_thread, d);
}

static inline void pgz_mbox_stop(struct device *d)
{
    pthread_mutex_lock(&d->lock);
    d->stop = 1;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->lock);
    pthread_join(d->thread, NULL);
}

#endif /* ZEPHYR_INCLUDE_DRIVERS_MBOX_H_ */
