
/*
 * "redis_ratelimit_metrics": counters of all workers in one shared memory
 * zone (atomic adds), served in the Prometheus text format by a location
 * handler, as stub_status does. The zone keeps its counters across reloads
 * (it has a fixed size, so nginx reuses it); a zone of limits keeps its
 * counters by name (in a table of ngx_http_redis_ratelimit_shm.c), one
 * removed stops being reported, one added (or added back) starts at 0. The
 * gauges are per worker: each writes its own slot (ngx_process_slot) every
 * second and when it serves the metrics; they are summed.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_redis_ratelimit_module.h"
#include "ngx_http_redis_ratelimit_shm.h"
#include "api/rrl_metrics_count.h"


#define NGX_HTTP_REDIS_RATELIMIT_METRICS_SIZE  (256 * 1024)
#define NGX_HTTP_REDIS_RATELIMIT_METRICS_PUBLISH  1000


/* the entry of a zone of limits in the table of zones, by its name */
typedef struct {
    ngx_atomic_t                 counters[RRL_METRICS_ZONE_COUNTERS];
    ngx_uint_t                   generation;  /* of the last config */
} ngx_http_redis_ratelimit_metrics_zone_t;


typedef struct {
    ngx_http_redis_ratelimit_shm_sh_t  *zones;
    ngx_uint_t                   generation;
    ngx_atomic_t                 errors[RRL_METRICS_ERR_KINDS];
    ngx_atomic_t                 rtt_buckets[RRL_METRICS_BUCKETS];
    ngx_atomic_t                 rtt_sum_us;
    rrl_metrics_gauges_t         slots[NGX_MAX_PROCESSES];  /* by worker */
} ngx_http_redis_ratelimit_metrics_shctx_t;


static ngx_int_t ngx_http_redis_ratelimit_metrics_handler(
    ngx_http_request_t *r);
static ngx_http_redis_ratelimit_metrics_shctx_t *
    ngx_http_redis_ratelimit_metrics_sh(void);
static rrl_metrics_gauges_t *ngx_http_redis_ratelimit_metrics_slot(void);
static void ngx_http_redis_ratelimit_metrics_publish(void);
static void ngx_http_redis_ratelimit_metrics_timer_handler(ngx_event_t *ev);
static ngx_int_t ngx_http_redis_ratelimit_metrics_init_zone(
    ngx_shm_zone_t *shm_zone, void *data);


static ngx_event_t       ngx_http_redis_ratelimit_metrics_timer;
/* whose gauges are this worker's: set by the link */
static rrl_engine_t     *ngx_http_redis_ratelimit_metrics_engine;
/* what the timer's debug lines read as its connection */
static ngx_connection_t  ngx_http_redis_ratelimit_metrics_dummy;
/* the zone's tag: nginx refuses a name another zone uses */
static ngx_uint_t        ngx_http_redis_ratelimit_metrics_tag;


static ngx_int_t
ngx_http_redis_ratelimit_metrics_handler(ngx_http_request_t *r)
{
    size_t                                     len;
    uint64_t                                   count[RRL_METRICS_ZONE_COUNTERS];
    ngx_int_t                                  rc;
    ngx_buf_t                                 *b;
    ngx_uint_t                                 i, j, k;
    ngx_str_t                                  type;
    rrl_metrics_t                              m;
    rrl_metrics_zone_t                        *mz;
    ngx_http_redis_ratelimit_zone_t           *zones;
    ngx_http_redis_ratelimit_main_conf_t      *rmcf;
    ngx_http_redis_ratelimit_metrics_zone_t   *entry;
    ngx_http_redis_ratelimit_metrics_shctx_t  *sh;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);

    if (rc != NGX_OK) {
        return rc;
    }

    rmcf = ngx_http_get_module_main_conf(r, ngx_http_redis_ratelimit_module);
    sh = rmcf->metrics_zone->data;

    ngx_memzero(&m, sizeof(rrl_metrics_t));

    zones = rmcf->zones.elts;

    mz = ngx_pcalloc(r->pool, (rmcf->zones.nelts + 1)
                              * sizeof(rrl_metrics_zone_t));
    if (mz == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    for (i = 0; i < rmcf->zones.nelts; i++) {
        entry = zones[i].metrics;

        if (entry == NULL) {
            /* no room in the zone: logged at start */
            continue;
        }

        mz[m.nzones].name = (const char *) zones[i].name.data;
        mz[m.nzones].len = zones[i].name.len;
        mz[m.nzones].overrides = zones[i].call.overrides;
        mz[m.nzones].lease = zones[i].lease != 0;
        mz[m.nzones].settle = zones[i].settle;

        for (j = 0; j < RRL_METRICS_ZONE_COUNTERS; j++) {
            count[j] = entry->counters[j];
        }

        rrl_metrics_zone_counts(&mz[m.nzones++], count);
    }

    m.zones = mz;

    ngx_http_redis_ratelimit_metrics_publish();

    for (k = 0; k < RRL_METRICS_ERR_KINDS; k++) {
        m.errors[k] = sh->errors[k];
    }

    for (k = 0; k < RRL_METRICS_BUCKETS; k++) {
        m.rtt_buckets[k] = sh->rtt_buckets[k];
    }

    m.rtt_sum_us = sh->rtt_sum_us;

    rrl_metrics_gauges_add(&m, sh->slots, NGX_MAX_PROCESSES);

    len = rrl_metrics_format(&m, NULL, 0);
    b = ngx_create_temp_buf(r->pool, len);

    if (len == 0 || b == NULL
        || rrl_metrics_format(&m, (char *) b->pos, len) != len)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last = b->pos + len;

    ngx_str_set(&type, "text/plain; version=0.0.4; charset=utf-8");

    return ngx_http_redis_ratelimit_send_body(r, NGX_HTTP_OK, &type, b);
}


/* the zone of the running configuration, if it has one */

static ngx_http_redis_ratelimit_metrics_shctx_t *
ngx_http_redis_ratelimit_metrics_sh(void)
{
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    rmcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                               ngx_http_redis_ratelimit_module);

    if (rmcf == NULL || rmcf->metrics_zone == NULL) {
        return NULL;
    }

    return rmcf->metrics_zone->data;
}


void
ngx_http_redis_ratelimit_metrics_request(ngx_http_redis_ratelimit_ctx_t *ctx)
{
    int                               counter;
    ngx_uint_t                        i, rejected;
    rrl_call_limit_t                 *call;
    ngx_http_redis_ratelimit_zone_t  *zone;

    rejected = (ctx->status == RRL_STATUS_REJECTED
                || ctx->status == RRL_STATUS_REJECTED_DRY_RUN);

    for (i = 0; i < ctx->nlimits; i++) {
        zone = ctx->limits[i]->zone;
        call = rrl_request_limit(ctx->request, i);

        /* a rejection counts in the zones that rejected it */
        counter = rrl_metrics_request_counter(ctx->status, rejected,
                              ctx->decided,
                              rrl_request_result(ctx->request, i)->passed);
        ngx_http_redis_ratelimit_metrics_count(zone, 0, counter);

        counter = rrl_metrics_override_counter(call->override, ctx->replied);
        ngx_http_redis_ratelimit_metrics_count(zone,
                                               RRL_METRICS_ZONE_OVERRIDES,
                                               counter);

        ngx_http_redis_ratelimit_metrics_count(zone, RRL_METRICS_ZONE_LEASES,
                    rrl_metrics_lease_counter(call->lease, ctx->leased,
                                              ctx->replied));
    }
}


void
ngx_http_redis_ratelimit_metrics_count(ngx_http_redis_ratelimit_zone_t *zone,
    ngx_int_t offset, int counter)
{
    ngx_http_redis_ratelimit_metrics_zone_t  *entry = zone->metrics;

    if (entry && counter >= 0) {
        (void) ngx_atomic_fetch_add(&entry->counters[offset + counter], 1);
    }
}


void
ngx_http_redis_ratelimit_metrics_error(int kind)
{
    ngx_http_redis_ratelimit_metrics_shctx_t  *sh;

    sh = ngx_http_redis_ratelimit_metrics_sh();

    if (sh && kind >= 0 && kind < RRL_METRICS_ERR_KINDS) {
        (void) ngx_atomic_fetch_add(&sh->errors[kind], 1);
    }
}


/* a script call's reply: its round trip's bucket and rtt, its error kind */

void
ngx_http_redis_ratelimit_metrics_reply(size_t bucket, uint64_t rtt, int kind)
{
    ngx_http_redis_ratelimit_metrics_shctx_t  *sh;

    sh = ngx_http_redis_ratelimit_metrics_sh();

    if (sh && bucket < RRL_METRICS_BUCKETS) {
        (void) ngx_atomic_fetch_add(&sh->rtt_buckets[bucket], 1);
        (void) ngx_atomic_fetch_add(&sh->rtt_sum_us, (ngx_atomic_int_t) rtt);
    }

    ngx_http_redis_ratelimit_metrics_error(kind);
}


void
ngx_http_redis_ratelimit_metrics_gauges(rrl_engine_t *engine)
{
    ngx_http_redis_ratelimit_metrics_engine = engine;
}


/* this worker's gauges, into its slot */

static void
ngx_http_redis_ratelimit_metrics_publish(void)
{
    rrl_metrics_t          m;
    rrl_metrics_gauges_t  *slot;

    slot = ngx_http_redis_ratelimit_metrics_slot();

    if (slot == NULL || ngx_http_redis_ratelimit_metrics_engine == NULL) {
        return;
    }

    ngx_memzero(&m, sizeof(rrl_metrics_t));
    rrl_engine_gauges(ngx_http_redis_ratelimit_metrics_engine, &m);

    rrl_metrics_gauges_save(&m, slot);
}


/* this worker's slot of gauges, if there is a zone */

static rrl_metrics_gauges_t *
ngx_http_redis_ratelimit_metrics_slot(void)
{
    ngx_http_redis_ratelimit_metrics_shctx_t  *sh;

    sh = ngx_http_redis_ratelimit_metrics_sh();

    if (sh == NULL || ngx_process_slot < 0
        || ngx_process_slot >= NGX_MAX_PROCESSES)
    {
        return NULL;
    }

    return &sh->slots[ngx_process_slot];
}


static void
ngx_http_redis_ratelimit_metrics_timer_handler(ngx_event_t *ev)
{
    ngx_http_redis_ratelimit_metrics_publish();

    if (!ngx_exiting && !ngx_terminate && !ngx_quit) {
        ngx_add_timer(ev, NGX_HTTP_REDIS_RATELIMIT_METRICS_PUBLISH);
    }
}


ngx_int_t
ngx_http_redis_ratelimit_metrics_init_process(ngx_cycle_t *cycle)
{
    ngx_event_t  *ev = &ngx_http_redis_ratelimit_metrics_timer;

    if (ngx_http_redis_ratelimit_metrics_sh() == NULL) {
        return NGX_OK;
    }

    ev->handler = ngx_http_redis_ratelimit_metrics_timer_handler;
    ev->log = cycle->log;
    ngx_http_redis_ratelimit_metrics_dummy.fd = (ngx_socket_t) -1;
    ev->data = &ngx_http_redis_ratelimit_metrics_dummy;
    ev->cancelable = 1;

    ngx_http_redis_ratelimit_metrics_publish();
    ngx_add_timer(ev, NGX_HTTP_REDIS_RATELIMIT_METRICS_PUBLISH);

    return NGX_OK;
}


/* a worker gone has no parked requests nor connections */

void
ngx_http_redis_ratelimit_metrics_exit_process(void)
{
    rrl_metrics_gauges_t  *slot;

    if (ngx_http_redis_ratelimit_metrics_timer.timer_set) {
        ngx_del_timer(&ngx_http_redis_ratelimit_metrics_timer);
    }

    slot = ngx_http_redis_ratelimit_metrics_slot();

    if (slot && (ngx_process == NGX_PROCESS_WORKER
                 || ngx_process == NGX_PROCESS_SINGLE))
    {
        ngx_memzero(slot, sizeof(rrl_metrics_gauges_t));
    }
}


char *
ngx_http_redis_ratelimit_metrics(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_str_t                              name;
    ngx_shm_zone_t                        *shm_zone;
    ngx_http_core_loc_conf_t              *clcf;
    ngx_http_redis_ratelimit_main_conf_t  *rmcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_redis_ratelimit_metrics_handler;

    rmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_redis_ratelimit_module);

    if (rmcf->metrics_zone) {
        return NGX_CONF_OK;
    }

    ngx_str_set(&name, RRL_CONF_METRICS_ZONE);

    shm_zone = ngx_shared_memory_add(cf, &name,
                                     NGX_HTTP_REDIS_RATELIMIT_METRICS_SIZE,
                                     &ngx_http_redis_ratelimit_metrics_tag);
    if (shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    /* the zones of limits are known once the whole configuration is read */
    shm_zone->init = ngx_http_redis_ratelimit_metrics_init_zone;
    shm_zone->data = rmcf;

    rmcf->metrics_zone = shm_zone;

    return NGX_CONF_OK;
}


/*
 * Run by the master, before the workers start: the counters of each zone of
 * limits, found by name in the shared memory (a reload keeps them), or new.
 * Entries are never dropped: old workers may still count into them.
 */

static ngx_int_t
ngx_http_redis_ratelimit_metrics_init_zone(ngx_shm_zone_t *shm_zone,
    void *data)
{
    ngx_uint_t                                 i, previous;
    ngx_http_redis_ratelimit_shm_t             table;
    ngx_http_redis_ratelimit_zone_t           *zones;
    ngx_http_redis_ratelimit_shm_node_t       *sn;
    ngx_http_redis_ratelimit_main_conf_t      *rmcf;
    ngx_http_redis_ratelimit_metrics_zone_t   *entry;
    ngx_http_redis_ratelimit_metrics_shctx_t  *sh;

    rmcf = shm_zone->data;

    table.shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    table.size = sizeof(ngx_http_redis_ratelimit_metrics_zone_t);
    table.end = 0;
    table.what = "metrics zone";

    if (data || shm_zone->shm.exists) {
        sh = table.shpool->data;
        table.sh = sh->zones;

    } else {
        sh = ngx_slab_calloc(table.shpool,
                             sizeof(ngx_http_redis_ratelimit_metrics_shctx_t));
        if (sh == NULL
            || ngx_http_redis_ratelimit_shm_create(&table, table.shpool,
                                                   &shm_zone->shm.name)
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        sh->zones = table.sh;
        table.shpool->data = sh;
    }

    /* the zone structure of the workers is the "data" of the new cycle */
    shm_zone->data = sh;

    previous = sh->generation;
    sh->generation++;

    zones = rmcf->zones.elts;

    ngx_http_redis_ratelimit_shm_lock(&table);

    for (i = 0; i < rmcf->zones.nelts; i++) {
        sn = ngx_http_redis_ratelimit_shm_get(&table, &zones[i].name, 0, 1);

        if (sn == NULL) {
            ngx_log_error(NGX_LOG_WARN, shm_zone->shm.log, 0,
                          "redis_ratelimit: no room for the metrics of "
                          "zone \"%V\"", &zones[i].name);
            continue;
        }

        /* busy for good: never dropped */
        sn->busy = NGX_HTTP_REDIS_RATELIMIT_SHM_FOUND;
        entry = (ngx_http_redis_ratelimit_metrics_zone_t *) sn->entry;

        /* new, or not in the previous configuration: from 0 */
        if (entry->generation != previous) {
            ngx_memzero((void *) entry->counters,
                        RRL_METRICS_STATUSES * sizeof(ngx_atomic_t));
        }

        entry->generation = sh->generation;
        zones[i].metrics = entry;
    }

    ngx_http_redis_ratelimit_shm_unlock(&table);

    return NGX_OK;
}
