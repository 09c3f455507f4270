/* pg_shm_life.pml — Promela model of ports/pg_shm.h's region lifecycle (splitcore)

   What ports/pg_shm.pml does for the mailbox, this file does for the boot and restart
   protocol: a generation in the header written by the formatter, each core's control words
   (the generation it attached to, its recover counter, its abort word), the attach, the
   recover rounds that every attach ends with, and a core that restarts mid-run.

   Two cores. Core 0 boots, formats the region (at any moment: before, during or after
   core 1's attach) and then attaches and receives. Core 1 attaches and sends MSGS messages
   (each tagged with its life and sequence number) through a ring of SLOTS slots; up to
   RESTARTS times, at any moment of its run (attach included), it restarts: its local state
   is lost and it attaches again, as after a warm reset or a watchdog. The region starts
   with what an earlier boot left: a header of generation 1, counters and abort words as a
   run of the protocol leaves them (rounds finished or cut in half) or garbage far from
   the generation's counters, a stale message in the ring. (A counter scribbled to within
   LEAD above another core's is outside the claim: random memory lands there with
   probability LEAD / 2^32 per word, and a header that fails its check word, what random
   memory has, is never attached to at all.)

   Checked by `spin` (scons test: spin -a, gcc pan.c, ./pan):
     - never trusted (assertions): an attach returns only in the generation this boot's
       format wrote, after that format; memory from the earlier boot or generation, or
       counters a core wrote while it was attached to it, never complete a recover round;
     - restart (assertions): core 0 never receives a message of core 1's earlier life once
       it finished a recover round with core 1's later one; messages of one life arrive in
       order, none twice; core 0 learns of a restart (PG_ERR_PEER_RESET: core 1's abort
       word) while it waits for core 1;
     - no deadlock: pan's invalid-end-state check — both cores finish;
     - progress (ltl all_done, weak fairness): both cores eventually finish.

   Modelled as in C (ports/pg_shm.h): counters compared within a window of LEAD
   (pg_shm__reached), counters of generation g based at g * BASE (PG_SHM__GEN_SHIFT), the
   header check (pg_shm__same_region) in every wait of a round, the round-up of a
   re-attaching core's counter. Simplifications: the format is one step (the C header is
   written before its magic word, with release; a half-written header fails its check
   word); a wait that times out is not modelled (a round only ends by every core arriving;
   a timeout returns and the caller retries, which is this model's loop); the ring is one
   direction with the index protocol of pg_shm.pml (checked there: slots, doorbells).

   The steps carry the names of the C code's steps (`STEP <name>` comments in
   ports/pg_shm.h); scons test checks that the models of pg_shm.h together name the same
   set as the code. */

#ifndef SLOTS
#define SLOTS 2          /* ring slots */
#endif
#ifndef MSGS
#define MSGS 2           /* messages core 1 sends per life */
#endif
#ifndef RESTARTS
#define RESTARTS 1       /* restarts of core 1 */
#endif
#define LEAD 8           /* PG_SHM__LEAD */
#define BASE 32          /* counters of generation g start at g * BASE */
#define RESET 2          /* abort word of a core that (re)attached */

/* header line (written by the formatter only) */
bit magic = 1;
byte hgen = 1;           /* the generation the header names */
/* control words of each core (written by that core only, and by the format) */
byte cgen[2];            /* the generation it attached to */
byte rec[2];             /* its recover counter */
byte abrt[2];            /* its abort word: 0, or RESET */
/* the ring core 1 -> core 0 */
byte widx, ridx;
byte slot_life[SLOTS], slot_seq[SLOTS];

bit formatted = 0;       /* this boot's format happened (core 0 sets it) */
byte life = 0;           /* core 1's current life */
byte synced_life = 255;  /* the life of core 1 that core 0 last finished a round with */
bit done0 = 0, done1 = 0;
byte restarts1 = 0;      /* core 1's restarts so far */
bit restart_now = 0;     /* core 1 restarts in the middle of its attach */

/* every core's counter reached e and is not further ahead than LEAD (pg_shm__reached) */
#define REACHED(e) ((((rec[0] - (e)) & 255) < LEAD) && (((rec[1] - (e)) & 255) < LEAD))

/* A recover round of core `me` (pg_shm__recover): on return ok = 1, or ok = 0 when the
   header changed under it (PG_ERR_CORRUPT: the caller attaches again). v, join, g: the
   core's local state. A core's drop of its inbox is `drop` (core 0 only has one). */
inline recover(me, v, join, g, ok) {
    ok = 1;
    if
    :: ((v & 3) == 0) && REACHED(v) -> v++ /* STEP arrive */
    :: else -> skip
    fi;
    do
    :: true ->
        rec[me] = v; /* STEP round_step */
        if
        :: REACHED(v) -> skip /* STEP round_poll */
        :: (!magic || hgen != g) -> ok = 0; break /* STEP check_generation */
        :: me == 1 && restarts1 < RESTARTS -> restarts1++; restart_now = 1; ok = 0; break
        fi;
        if
        :: ((v & 3) == 0) ->
            if
            :: (((v - join) & 255) < 128) -> break /* every core done, and the attach's round */
            :: else -> v++
            fi
        :: ((v & 3) == 2) ->
            atomic { /* STEP drop_inbox: nobody sends (every core committed) */
                if
                :: me == 0 -> ridx = widx
                :: else -> skip
                fi;
                abrt[me] = 0;
                if
                :: me == 0 -> synced_life = life
                :: else -> skip
                fi
            }
            v = v + 2
        :: else -> v++ /* arrived -> committed */
        fi
    od
}

/* pg_shm_init: wait for a header that checks, take its generation, the own counter (a
   core attached to this generation before rounds up past its round), announce the attach
   in the abort word, then a round of its own; a header that changes starts it over. */
inline attach(me, v, join, g, ok) {
    do
    :: true ->
        magic == 1; /* STEP check_header_line */
        atomic {
            g = hgen; /* STEP attach */
            if
            :: cgen[me] == g -> v = (rec[me] + 4) & 252
            :: else -> v = g * BASE
            fi;
            join = v + 4
        }
        rec[me] = v;
        cgen[me] = g;
        abrt[me] = RESET; /* STEP announce_reset */
        recover(me, v, join, g, ok);
        if
        :: ok -> break
        :: restart_now -> restart_now = 0; life++ /* a warm reset in the middle of the attach */
        :: else -> skip
        fi
    od;
    assert(formatted && g == hgen) /* never attached to an earlier boot's generation */
}

proctype core0()
{
    byte v, join, g, got = 0, last_life = 255, next_seq = 0, k;
    bit ok;
    /* the formatter, at any moment */
    atomic { /* STEP format */
        hgen++;
        magic = 1;
        cgen[0] = 0; cgen[1] = 0; rec[0] = 0; rec[1] = 0; abrt[0] = 0; abrt[1] = 0;
        widx = 0; ridx = 0;
        formatted = 1
    }
    attach(0, v, join, g, ok);
    do
    :: done1 && got == MSGS && last_life == life -> break
    :: widx != ridx ->
        atomic { /* STEP read_payload */
            k = ridx % SLOTS;
            assert(synced_life == 255 || slot_life[k] == synced_life); /* nothing of an earlier life */
            if
            :: slot_life[k] != last_life -> last_life = slot_life[k]; next_seq = 0; got = 0
            :: else -> skip
            fi;
            assert(slot_seq[k] == next_seq); /* in order, none twice */
            next_seq++;
            got++;
            ridx++
        }
    :: abrt[1] == RESET -> /* STEP check_abort: PG_ERR_PEER_RESET, then pg_recover */
        recover(0, v, join, g, ok);
        assert(ok)
    od;
    done0 = 1
}

proctype core1()
{
    byte v, join, g, head, sent = 0;
    bit ok;
restart:
    attach(1, v, join, g, ok);
    head = widx; /* its own published index, adopted */
    sent = 0;
    do
    :: sent == MSGS -> break
    :: restarts1 < RESTARTS -> /* a warm reset: everything local is lost */
        restarts1++;
        life++;
        goto restart
    :: sent < MSGS && ((head - ridx) & 255) < SLOTS ->
        atomic { /* STEP write_slot */
            slot_life[head % SLOTS] = life;
            slot_seq[head % SLOTS] = sent;
            head++;
            sent++
        }
        widx = head
    od;
    done1 = 1;
    done0 == 1 /* stays attached until core 0 is done */
}

init {
    /* what an earlier boot left: generation 1's header and what a run of the protocol
       leaves in it (both cores attached, rounds done or half done; or core 1 never
       attached, so core 0 never finished a round), or garbage (counters far from any the
       generation uses); a stale message */
    if
    :: rec[0] = BASE + 4; rec[1] = BASE + 4; cgen[0] = 1; cgen[1] = 1
    :: rec[0] = BASE + 5; rec[1] = BASE + 4; cgen[0] = 1; cgen[1] = 1
    :: rec[0] = BASE + 6; rec[1] = BASE + 5; cgen[0] = 1; cgen[1] = 1
    :: rec[0] = BASE + 8; rec[1] = BASE + 6; cgen[0] = 1; cgen[1] = 1
    :: rec[0] = BASE + 1; rec[1] = 0; cgen[0] = 1; cgen[1] = 0
    :: rec[0] = 200; rec[1] = 7; cgen[0] = 1; cgen[1] = 1
    :: rec[0] = 200; rec[1] = 7; cgen[0] = 1; cgen[1] = 0
    fi;
    if
    :: abrt[1] = RESET
    :: skip
    fi;
    slot_life[0] = 9; slot_seq[0] = 0; widx = 1;
    atomic {
        run core0();
        run core1()
    }
}

ltl all_done { <> (done0 && done1) }
