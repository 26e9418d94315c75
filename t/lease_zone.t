#!/usr/bin/perl

# redis_ratelimit_lease_zone SIZE (issue 25, R2): the lease table's size.
# - nginx -t: at least 32k (8 pages), a size; refused otherwise, naming the
#   directive, the value and FILE:LINE; once only; http context only;
#   local_zone= cannot take the table's name;
# - churn: two nginx servers (one worker each) with a 32k table (about a
#   hundred keys) against one Redis, 200 keys of fixed_window 10r/h
#   lease=50% (the largest lease 5), 14 requests a key (7 to each server,
#   interleaved over the keys): the table drops entries while they hold
#   units; never more than 10 passes a key across the fleet, Redis's count
#   never over 10; the leases taken exceed one a key and server (entries
#   made again after being dropped), where a 10m table takes exactly one a
#   key and server; every key still passes at least 5 (each request takes
#   its cost + 1, the unit over its cost dropped with its entry: the waste
#   bound of a working set larger than the table); the undershoot is
#   printed;
# - a reload that keeps the size keeps the table (a lease held still
#   serves); one that changes it starts afresh.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

###########################################################################
# nginx -t

sub conf_t {
    my ($http, $srv) = @_;
    return "http {\n    redis_ratelimit_server 127.0.0.1:6379;\n"
        . "    redis_ratelimit_zone \$arg_k zone=z rate=5r/s lease=10%;\n"
        . "$http    server {\n        listen 127.0.0.1:%%PORT%%;\n$srv"
        . "        location / { redis_ratelimit zone=z; }\n    }\n}\n";
}

for my $bad ('16k', '0', 'lots', 'off', '1') {
    my ($out, $rc, $file, $line) =
        $t->nginx_t_here(conf_t("    redis_ratelimit_lease_zone $bad; # HERE\n", ''));
    isnt($rc, 0, "nginx -t refuses lease_zone $bad");
    like($out, qr/\[emerg\] invalid zone size "\Q$bad\E" in "redis_ratelimit_lease_zone" directive, it must be at least 32k in \Q$file\E:$line$/m,
        "lease_zone $bad: the message names the value, the minimum and FILE:LINE")
        or diag($out);
}

{
    my ($out, $rc) = $t->nginx_t(conf_t("    redis_ratelimit_lease_zone 32k;\n", ''));
    is($rc, 0, 'nginx -t accepts lease_zone 32k') or diag($out);
    ($out, $rc) = $t->nginx_t(conf_t("    redis_ratelimit_lease_zone 1m;\n"
        . "    redis_ratelimit_lease_zone 2m;\n", ''));
    isnt($rc, 0, 'a second lease_zone is refused');
    like($out, qr/"redis_ratelimit_lease_zone" directive is duplicate/, '... as duplicate');
    ($out, $rc) = $t->nginx_t(conf_t('', "        redis_ratelimit_lease_zone 1m;\n"));
    isnt($rc, 0, 'lease_zone in server{} is refused');
    like($out, qr/"redis_ratelimit_lease_zone" directive is not allowed here/,
        '... as not allowed here');
    ($out, $rc) = $t->nginx_t(conf_t('',
        "        redis_ratelimit_fail local local_zone=redis_ratelimit_lease:1m;\n"));
    isnt($rc, 0, 'local_zone= cannot take the lease table\'s name');
    like($out, qr/zone "redis_ratelimit_lease" is the module's own/, '... the message')
        or diag($out);
}

###########################################################################
# churn

my $conf = <<'EOF';
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=1s;
    redis_ratelimit_lease_zone %%SIZE%%;
    redis_ratelimit_zone $arg_k zone=churn rate=10r/h algorithm=fixed_window lease=50%;
    redis_ratelimit_deny_cache off;

    server {
        listen 127.0.0.1:%%PORT%%;
        location = /metrics { redis_ratelimit_metrics; }
        location / {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=churn;
        }
    }
}
EOF

sub conf_of { (my $c = $conf) =~ s/%%SIZE%%/$_[0]/; $c }

my @n = map { $t->start_nginx(conf_of('32k')) } 1 .. 2;
my $m = $t->start_nginx(conf_of('10m'));

sub taken {
    my ($x) = @_;
    my ($h) = $x->metrics;
    return $h->{'redis_ratelimit_leases_total{zone="churn",event="taken"}'} // 0;
}

# the requests decided from a lease and after Redis
sub from {
    map { $_ // 0 } $_[0]->zone_metrics('lease_requests_total', 'churn', 'from',
        qw(lease redis));
}

sub fw_count { $t->fw_count($_[0]) }

# 14 requests a key, 7 to each of two servers, interleaved over the keys:
# the passes of each key
sub churn {
    my ($prefix, @servers) = @_;
    my %pass;
    my @keys = map { "$prefix$_" } 1 .. 200;
    for my $round (1 .. 7) {
        for my $s (@servers) {
            for (my $i = 0; $i < @keys; $i += 20) {
                my @batch = @keys[$i .. ($i + 19 > $#keys ? $#keys : $i + 19)];
                my @r = $s->parallel(map { "/?k=$_" } @batch);
                for my $j (0 .. $#batch) {
                    $pass{$batch[$j]}++ if ($r[$j]{status} // 0) == 200;
                }
            }
        }
    }
    return map { $pass{$_} // 0 } @keys;
}

$t->wait_window(3600, 120);

{
    my @taken0 = map { taken($_) } @n;
    my @pass = churn('c', @n);
    my @over = grep { $_ > 10 } @pass;
    is(scalar @over, 0, 'churn, 32k tables: never more than 10 passes a key '
        . 'across the two servers');
    my @counts = map { fw_count("rrl:{churn:c$_}:fw") } 1 .. 200;
    is(scalar(grep { $_ > 10 } @counts), 0, "churn: Redis's count never over 10");
    my @taken = map { taken($n[$_]) - $taken0[$_] } 0 .. 1;
    cmp_ok($taken[$_], '>', 200, "churn: server $_ took $taken[$_] leases for "
        . '200 keys: entries dropped and made again') for 0 .. 1;
    my $passed = 0;
    $passed += $_ for @pass;
    my $short = grep { $_ < 10 } @pass;
    diag("32k tables: $passed passes of 2000 (" . sprintf('%.1f', 100 - $passed / 20)
        . "% undershoot), $short keys under 10, leases taken @taken");
    cmp_ok($passed, '<=', 2000, 'churn: at most the limit in all');
    # the working set (200 keys) is larger than the table: every request
    # finds its key's entry dropped, asks for its cost + 1 (a key never
    # seen) and the unit over its cost lapses with the entry: half the
    # limit at cost 1, the waste bound of this churn
    is(scalar(grep { $_ < 5 } @pass), 0, 'churn: at least 5 a key (cost + 1 '
        . 'taken for each pass)');
}

{
    my $taken0 = taken($m);
    my @pass = churn('d', $m, $m);
    is(scalar(grep { $_ > 10 } @pass), 0, 'a 10m table: never more than 10 a key');
    is(taken($m) - $taken0, 200, 'a 10m table: one lease taken a key, none dropped');
    my $passed = 0;
    $passed += $_ for @pass;
    is($passed, 2000, 'a 10m table, one server: every unit used, 10 a key');
}

###########################################################################
# reload: the same size keeps the table, another starts afresh

{
    my $r = $m->get('/?k=r');
    is($r->{status}, 200, 'before reload: a lease taken');
    sleep 0.2;
    my @from = from($m);
    $m->reload(conf_of('10m'));
    $r = $m->get('/?k=r');
    is($r->{status}, 200, 'reload, same size: 200');
    my @now = from($m);
    is($now[0] - $from[0], 1, 'reload, same size: decided from the lease kept');
    is($now[1] - $from[1], 0, '... not by Redis');
    sleep 0.2;
    @from = from($m);
    $m->reload(conf_of('1m'));
    $r = $m->get('/?k=r');
    is($r->{status}, 200, 'reload to 1m: 200');
    @now = from($m);
    is($now[1] - $from[1], 1, 'reload to 1m: the table starts afresh, Redis asked');
    is($now[0] - $from[0], 0, '... no lease');
}

$t->done_testing;
