#!/usr/bin/perl

# settle= (issue 17): two nginx sharing a budget in one Redis.
# - a refund settled by one is what the other's next request sees;
# - a debt made through one (a token bucket of 100r/s): the other rejects
#   the key with Retry-After; one second before that time it still
#   rejects, on time it passes;
# - both at once, 20 requests each on one key, each reserving 10 and
#   settling a different actual cost: Redis's state is exactly the sum of
#   the actual costs (a fixed window), the bucket the burst less that sum
#   (a token bucket at 1000/h: within what refills meanwhile, a refund
#   after another request's state keeping that back).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX ();
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Upstream;

my $t = RRL::Test->new;
$t->start_redis;
my $u = RRL::Upstream->start($t);

my $conf = <<'EOF';
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=fw rate=1000r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=tb rate=100r/s burst=100 algorithm=token_bucket;
    redis_ratelimit_zone $arg_key zone=tbh rate=1000r/h burst=1000 algorithm=token_bucket;

    server {
        listen 127.0.0.1:%%PORT%%;
        add_header X-RL-Status $redis_ratelimit_status always;

        location = /metrics { redis_ratelimit_metrics; }
        location /fw/ {
            redis_ratelimit zone=fw cost=%%COST%% settle=$upstream_http_x_usage_total_tokens;
            proxy_pass http://127.0.0.1:%%UPSTREAM%%/;
        }
        location /fw-c/ {
            redis_ratelimit zone=fw cost=100;
            proxy_pass http://127.0.0.1:%%UPSTREAM%%/;
        }
        location /tb/ {
            redis_ratelimit zone=tb cost=100 settle=$upstream_http_x_usage_total_tokens;
            proxy_pass http://127.0.0.1:%%UPSTREAM%%/;
        }
        location /tb-c/ {
            redis_ratelimit zone=tb cost=100;
            proxy_pass http://127.0.0.1:%%UPSTREAM%%/;
        }
        location /tbh/ {
            redis_ratelimit zone=tbh cost=10 settle=$upstream_http_x_usage_total_tokens;
            proxy_pass http://127.0.0.1:%%UPSTREAM%%/;
        }
        location /fw10/ {
            redis_ratelimit zone=fw cost=10 settle=$upstream_http_x_usage_total_tokens;
            proxy_pass http://127.0.0.1:%%UPSTREAM%%/;
        }
    }
}
EOF
my $up = $u->port;
$conf =~ s/%%UPSTREAM%%/$up/g;
$conf =~ s/%%COST%%/100/g;

my $na = $t->start_nginx($conf);
my $nb = $t->start_nginx($conf);

my $H = 3600;
my $w = $t->wait_window($H, 60) / $H - 1;

sub settled {
    my ($n, $zone) = @_;
    join ' ', map { $_ // 'none' }
        $n->zone_metrics('settlements_total', $zone, 'result', qw(settled settle_failed));
}

# waits until both nginx together have settled $want of a zone (none failed)
sub wait_both {
    my ($zone, $want) = @_;
    my $deadline = time + 5;
    while (time < $deadline) {
        my ($sa, $fa) = split / /, settled($na, $zone);
        my ($sb, $fb) = split / /, settled($nb, $zone);
        return 1 if "$fa $fb" eq '0 0' && $sa + $sb == $want;
        sleep 0.02;
    }
    return 0;
}

# a refund through A, seen through B

{
    my $r = $na->get('/fw/?key=r&usage=30');
    is($r->{status}, 200, 'refund through A: 200');
    ok(wait_both('fw', 1), 'refund through A: settled');
    $r = $nb->get('/fw-c/?key=r');
    is($r->{h}{'x-ratelimit-remaining'}, 870, 'B sees 870 after A\'s refund');
}

# a debt through B, seen through A: Retry-After exact

{
    my $r = $nb->get('/tb/?key=d&usage=400');
    is($r->{status}, 200, 'debt through B: 200');
    ok(wait_both('tb', 1), 'debt through B: settled');
    # -300 tokens at 100/s: 100 are back 4 s after the settlement
    $r = $na->get('/tb-c/?key=d');
    my $t1 = time;
    is($r->{status}, 429, 'A rejects the key in debt');
    my $ra = $r->{h}{'retry-after'} // 0;
    is($ra, 4, 'A: Retry-After 4');
    my $early = $t1 + $ra - 1 - time;
    sleep $early if $early > 0;
    is($na->get('/tb-c/?key=d')->{status}, 429, 'A: one second earlier: rejected');
    my $on = $t1 + $ra - time;
    sleep $on if $on > 0;
    is($na->get('/tb-c/?key=d')->{status}, 200, 'A: on time: passes');
}

# both at once: the state is the sum of the actual costs

{
    my (%uris, $sum_fw, $sum_tb);
    for my $n ($na, $nb) {
        for my $i (1 .. 20) {
            my $usage = int rand 21;    # 0 to 20, some below and some above 10
            $sum_fw += $usage;
            push @{ $uris{$n->{index}} }, "/fw10/?key=both&usage=$usage";
            my $usage2 = int rand 21;
            $sum_tb += $usage2;
            push @{ $uris{$n->{index}} }, "/tbh/?key=both&usage=$usage2";
        }
    }
    # each nginx in a process of its own, all requests at once
    my $start = time;
    my @pids;
    for my $n ($na, $nb) {
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            my @r = $n->parallel(@{ $uris{$n->{index}} });
            POSIX::_exit((grep { ($_->{status} // 0) != 200 } @r) ? 1 : 0);
        }
        push @pids, $pid;
    }
    my $bad = 0;
    for (@pids) { waitpid($_, 0); $bad++ if $? }
    # what refilled at 1000/h meanwhile: a token bucket's refund is exact
    # only while the state is the one its charge stored; one stored since
    # keeps back what refilled in between (the strict side), up to that
    # much for each of the 40
    my $refill = (time - $start + 1) * 1000 / 3600;
    is($bad, 0, 'both at once: 80 requests, all 200');
    ok(wait_both('fw', 1 + 40), 'both at once: fw: 40 more settled');
    ok(wait_both('tbh', 40), 'both at once: tbh: 40 settled');
    is($t->redis('GET', 'rrl:{fw:both}:fw'), "$w:$sum_fw",
        "fixed_window: the count is the sum of the actual costs ($sum_fw)");
    my ($tokens) = split /:/, $t->redis('GET', 'rrl:{tbh:both}:tb');
    ok(defined $tokens && $tokens >= 1000 - $sum_tb - 40 * $refill
        && $tokens < 1000 - $sum_tb + $refill + 1,
        "token_bucket: 1000 less the sum of the actual costs ($sum_tb): "
        . ($tokens // 'none'));
}

my @crash = map { $_->grep_log(qr/\[(alert|crit|emerg)\]|exited on signal|\[warn\].*settle/) } $na, $nb;
is_deeply(\@crash, [], 'no alert, crit, crash or settle warning in the error logs');

$t->done_testing;
