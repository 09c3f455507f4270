/* pg_shm_coll.pml — Promela model of ports/pg_shm.h's native collectives (splitcore)

   With PG_SHM_NATIVE_COLLECTIVES every meeting of the cores (a barrier, a small
   all_reduce, all_gather, reduce_scatter or broadcast, each step of a large one) is one
   epoch e: a core writes its data into its buffer e & 1, publishes e at the head of that
   buffer and waits until every core published e (a broadcast: until the root did; the root
   waits for nobody), then reads the other cores' buffers e & 1. Before it writes buffer
   e & 1 a core makes sure every core published e - 1 (it knows that when it met every core
   at e - 1). Doorbells on demand as in pg_shm.pml: a core that found nothing announces that
   it waits, polls once more and sleeps; a core that published looks at the others'
   announcements and rings those.

   CORES cores run the same sequence of COLLS meetings, each either one where every core
   waits for every core or a broadcast from core 0, in any of the 2^COLLS orders (chosen in
   init). scons test checks two configurations: 2 cores with doorbells, and 3 cores that
   poll (-DCORES=3 -DBUSYPOLL; with 2 cores a broadcast's other core is always its root,
   which hides a core that counts a broadcast as having met everyone). Checked by `spin`
   (spin -a, gcc pan.c, ./pan):
     - safety (assertions): every core reads, for every meeting, exactly the data each core
       wrote for that meeting (no buffer is overwritten while a core still reads it, none is
       read before it is written); a published epoch a waiting core reads is e, e - 1 or
       e - 2 (what pg_shm__arrived accepts; anything else it reports as corrupt);
     - no deadlock: pan's invalid-end-state check;
     - progress and no lost wake-up (ltl all_done, weak fairness; with doorbells): every
       core finishes every meeting; wait() has no tick here, only SPURIOUS spurious
       wake-ups, so a core left asleep while what it waits for is published would never
       finish.
   Mutations checked by hand when the model was written, each caught: no reuse check before
   a write (a data assertion, two cores), a broadcast counted as a meeting with every core
   (a data assertion, three cores), the epoch published in the other buffer (a deadlock).

   As in pg_shm.pml, Promela's interleaving is sequentially consistent: the C code gets the
   same order from release stores of the epochs, acquire loads, and a full barrier between a
   core's store and its look at the other side's word. A core's write of its data is one
   step (nobody may read that buffer then: the property checked is that nobody does).

   The steps carry the names of the C code's steps (`STEP <name>` comments in
   ports/pg_shm.h); scons test checks that the models of pg_shm.h together name the same
   set as the code. */

#ifndef CORES
#define CORES 2
#endif
#ifndef COLLS
#define COLLS 4          /* meetings: more than two, so buffers are reused */
#endif
#ifndef SPURIOUS
#define SPURIOUS 1
#endif
#define ALL (-1)

byte seq[CORES * 2];     /* published epoch at the head of buffer b of core c: [2c + b] */
byte data[CORES * 2];    /* the data in it: 10 * epoch + core */
short kind[COLLS + 1];   /* meeting e: ALL, or the root of a broadcast */
byte finished = 0;

/* doorbells, one per core (pg_shm.pml's interrupt controller) */
bit rung[CORES];
bit pending[CORES];
bit asleep[CORES];
bit waiting[CORES];
byte spurious = 0;

/* core c published epoch e, or is further: for a waiting core, what it may read */
#define PUBLISHED(c, e) (seq[2 * (c) + ((e) & 1)] == (e))

inline wait_doorbell(core) {
    asleep[core] = 1;
    pending[core] == 1;
    pending[core] = 0;
    asleep[core] = 0
}

/* Nothing yet: announce first and poll once more (the caller's loop), then sleep. With
   BUSYPOLL (-DBUSYPOLL: the data protocol alone, small enough for three cores) cores poll. */
#ifdef BUSYPOLL
inline idle(core) {
    skip
}
#else
inline idle(core) {
    if
    :: !waiting[core] -> waiting[core] = 1 /* STEP announce */
    :: else ->
        /* STEP wait */
        wait_doorbell(core)
    fi
}
#endif

/* the epoch a waiting core reads is e, e - 1 or e - 2 */
inline check_window(c, e) {
    assert(seq[2 * (c) + ((e) & 1)] == (e) || seq[2 * (c) + ((e) & 1)] + 1 == (e) ||
           seq[2 * (c) + ((e) & 1)] + 2 == (e))
}

proctype core(byte me)
{
    byte e = 0, met = 0, c, k;
    do
    :: e == COLLS -> break
    :: else ->
        /* STEP wait_reuse: every core published e (the buffer's previous epoch is e - 1) */
        if
        :: met != e ->
            c = 0;
            do
            :: c == CORES -> break
            :: c < CORES && PUBLISHED(c, e) -> check_window(c, e); c++
            :: c < CORES && !PUBLISHED(c, e) -> check_window(c, e); idle(me)
            od;
            waiting[me] = 0; /* STEP withdraw */
            met = e
        :: else -> skip
        fi;
        e++;
        /* STEP write_data */
        data[2 * me + (e & 1)] = 10 * e + me;
        /* STEP publish_epoch */
        seq[2 * me + (e & 1)] = e;
        /* ring every core that announced that it waits */
        k = 0;
        do
        :: k == CORES -> break
        :: else ->
            if
            :: waiting[k] -> /* STEP check_waiting */
                /* STEP notify */
                rung[k] = 1
            :: else -> skip
            fi;
            k++
        od;
        if
        :: kind[e] == me -> skip /* the root of a broadcast waits for nobody */
        :: else ->
            /* STEP wait_epoch: every core (or the root) published e */
            c = (kind[e] == ALL -> 0 : kind[e]);
            do
            :: (kind[e] == ALL && c == CORES) || (kind[e] != ALL && c == kind[e] + 1) -> break
            :: else ->
                check_window(c, e);
                if
                :: PUBLISHED(c, e) ->
                    /* STEP read_data */
                    assert(data[2 * c + (e & 1)] == 10 * e + c);
                    c++
                :: else -> idle(me)
                fi
            od;
            waiting[me] = 0;
            if
            :: kind[e] == ALL -> met = e
            :: else -> skip
            fi
        fi
    od;
    finished++
}

/* the interrupt controller: delivers rung doorbells (any delay, any order) and at most
   SPURIOUS wake-ups without a notify */
proctype doorbell()
{
end:
    do
    :: atomic { rung[0] -> rung[0] = 0; pending[0] = 1 }
    :: atomic { rung[1] -> rung[1] = 0; pending[1] = 1 }
#if CORES > 2
    :: atomic { rung[2] -> rung[2] = 0; pending[2] = 1 }
#endif
    :: atomic { spurious < SPURIOUS && asleep[0] -> spurious++; pending[0] = 1 }
    :: atomic { spurious < SPURIOUS && asleep[1] -> spurious++; pending[1] = 1 }
    od
}

init {
    byte e = 1, c;
    do
    :: e > COLLS -> break
    :: else ->
        if
        :: kind[e] = ALL
        :: kind[e] = 0
        fi;
        e++
    od;
    atomic {
        c = 0;
        do
        :: c == CORES -> break
        :: else -> run core(c); c++
        od;
        run doorbell()
    }
}

ltl all_done { <> (finished == CORES) }
