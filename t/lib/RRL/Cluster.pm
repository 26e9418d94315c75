package RRL::Cluster;

# A real Redis Cluster for end-to-end tests, inside an RRL::Test's
# directory: N primaries with R replicas each (3 + 3 by default), on
# loopback ports chosen free together with their cluster bus port
# (port + 10000), no persistence, a small cluster-node-timeout so that
# failovers are quick. Created with `redis-cli --cluster create`; new()
# returns once every node says cluster_state:ok, every node shows the same
# slot map and every replica's link to its primary is up.
#
#   my $c = RRL::Cluster->new($t, node_timeout => 1000,
#       acl => ['rrl', 'secret']);        # optional ACL user on every node
#   $c->seeds;                  # "127.0.0.1:p1 127.0.0.1:p2 127.0.0.1:p3"
#   $c->primaries;              # ports of the primaries, in slot order
#   $c->replicas_of($primary);  # ports of its replicas
#   $c->slot_owner($slot);      # port of the primary serving a slot
#   RRL::Cluster::keyslot($k);  # CRC16 slot, hash tags as Redis does
#   RRL::Cluster::rrl_slot($zone, $key);       # slot of a limit's key
#   $c->key_on($primary, $zone, $prefix);      # a client key served there
#   RRL::Cluster::keys_in_slot($slot, $n, $zone);  # n client keys, one slot
#   $c->migrate_slot($slot, $to_port, batch => 1, pause => 0.05);
#   $c->reshard_cli($n, $from, $to);            # redis-cli --cluster reshard
#   $c->failover($replica);     # CLUSTER FAILOVER, waits for the switch
#   $c->kill_node($port); $c->wait_promoted($replica, 10);
#   $c->cli($port, @command);   # redis-cli to one node (as the ACL user)
#   $c->module_clients($port), $c->errorstats($port), $c->reset_stats
#
# With tls => $cert (RRL::Tls::cert), every node serves TLS on its port
# (its cluster bus and replication too: tls-cluster, tls-replication) and
# plain TCP on another ($c->plain_port($port)); redis-cli speaks TLS.
#
# Every redis-server is stopped when the test file ends, dies or is
# interrupted (RRL::Test's cleanup and END; each server also gets
# PR_SET_PDEATHSIG, so even a killed test leaves none behind).

use strict;
use warnings;

use Carp qw(croak);
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Tls;

my @clusters;    # for END

############################################################################
# slots: CRC16-XMODEM of the key or of its hash tag, mod 16384

my @CRC16;
for my $i (0 .. 255) {
    my $c = $i << 8;
    for (1 .. 8) {
        $c = ($c & 0x8000) ? (($c << 1) ^ 0x1021) : ($c << 1);
    }
    push @CRC16, $c & 0xffff;
}

sub crc16 {
    my $c = 0;
    $c = (($c << 8) & 0xff00) ^ $CRC16[(($c >> 8) ^ $_) & 0xff]
        for unpack 'C*', $_[0];
    return $c;
}

# the slot of a Redis key: the part between the first '{' and the first
# '}' after it, when not empty, else the whole key
sub keyslot {
    my ($key) = @_;
    my $s = index $key, '{';
    if ($s >= 0) {
        my $e = index $key, '}', $s + 1;
        $key = substr($key, $s + 1, $e - $s - 1) if $e > $s + 1;
    }
    return crc16($key) & 16383;
}

# the module's Redis key of a limit (README: rrl:{<zone>:<key>}:<tag>)
sub rrl_key {
    my ($zone, $key, $tag) = @_;
    return "rrl:{$zone:$key}:" . ($tag // 'sw');
}

# the slot of a limit's key
sub rrl_slot {
    my ($zone, $key, $tag) = @_;
    return keyslot(rrl_key($zone, $key, $tag));
}

# $n client keys "$prefix<i>" whose limit key in $zone is in $slot
sub keys_in_slot {
    my ($slot, $n, $zone, $prefix) = @_;
    $prefix //= 'k';
    my @k;
    for (my $i = 0; @k < $n; $i++) {
        croak "no key found for slot $slot" if $i > 5_000_000;
        push @k, "$prefix$i" if rrl_slot($zone, "$prefix$i") == $slot;
    }
    return @k;
}


############################################################################
# processes

# PR_SET_PDEATHSIG(SIGKILL) in the child, before exec: a server dies with
# the test process, whatever kills it (x86_64 and aarch64 Linux)
sub pdeathsig {
    my %nr = (x86_64 => 157, aarch64 => 167);
    my $arch = (POSIX::uname())[4];
    syscall($nr{$arch}, 1, 9) if $^O eq 'linux' && $nr{$arch};
}

# spawn(\@cmd, $dir): runs a server in the foreground, stdout and stderr
# to $dir/stdout; returns its pid
sub spawn {
    my ($cmd, $dir) = @_;
    my $pid = fork;
    croak "fork: $!" unless defined $pid;
    if ($pid == 0) {
        pdeathsig();
        setpgrp(0, 0);    # not in the test's process group (Ctrl-C)
        open STDIN, '<', '/dev/null';
        open STDOUT, '>>', "$dir/stdout";
        open STDERR, '>&', \*STDOUT;
        { no warnings q(exec); exec @$cmd; }
        POSIX::_exit(127);
    }
    return $pid;
}

sub reap {
    my ($pid, $timeout) = @_;
    my $deadline = time + ($timeout // 10);
    while (time < $deadline) {
        my $w = waitpid($pid, WNOHANG);
        return 1 if $w == $pid || $w == -1;
        sleep 0.01;
    }
    return 0;
}

sub stop_pid {
    my ($pid) = @_;
    return unless $pid;
    kill 'TERM', $pid;
    return if reap($pid, 5);
    kill 'KILL', $pid;
    reap($pid, 5);
}

# a port P, with P + 10000 (its cluster bus) free too, under the ephemeral
# range so that no outgoing connection takes it: 20000 .. 22767 (bus
# 30000 .. 32767), away from the usual fixed test ports (7000s, 17000s)
sub free_cluster_port {
    my ($taken) = @_;
    for (1 .. 1000) {
        my $p = 20000 + int rand 2768;
        next if $taken->{$p} || $taken->{$p + 10000} || $taken->{$p - 10000};
        my @s = map { IO::Socket::INET->new(LocalAddr => '127.0.0.1',
            LocalPort => $_, Proto => 'tcp', Listen => 1, ReuseAddr => 1) }
            $p, $p + 10000;
        my $ok = $s[0] && $s[1];
        close $_ for grep { $_ } @s;
        # and no other test file's (RRL::Test::claim_port)
        if ($ok && RRL::Test::claim_port($p)
                && RRL::Test::claim_port($p + 10000)) {
            $taken->{$p} = $taken->{$p + 10000} = 1;
            return $p;
        }
    }
    croak 'no free cluster port';
}


############################################################################

# new($t, primaries => 3, replicas => 1, node_timeout => 1000,
#     acl => [user, password], full_coverage => 1, args => [...],
#     tls => $cert)

sub new {
    my ($class, $t, %o) = @_;

    my $self = bless {
        t => $t,
        dir => $t->testdir . '/cluster',
        nprimaries => $o{primaries} // 3,
        nreplicas => $o{replicas} // 1,
        node_timeout => $o{node_timeout} // 1000,
        acl => $o{acl},
        full_coverage => $o{full_coverage} // 1,
        args => $o{args} // [],
        tls => $o{tls},
        nodes => {},    # port => {port, pid, dir}
        owner => $$,
    }, $class;
    $t->register_servers($self, \@clusters);

    my $start = time;
    my $n = $self->{nprimaries} * (1 + $self->{nreplicas});

    for my $attempt (1 .. 3) {
        my %taken;
        my @ports = map { free_cluster_port(\%taken) } 1 .. $n;
        my $ok = eval {
            $self->start_node($_) for @ports;
            1;
        };
        last if $ok;
        my $err = $@;
        $self->stop;
        $self->{nodes} = {};
        croak $err if $attempt == 3 || $err !~ /in use|did not answer/i;
    }

    $self->create;
    $self->{started_in} = time - $start;

    return $self;
}

sub start_node {
    my ($self, $port) = @_;

    my $dir = "$self->{dir}/$port";
    mkdir $dir;
    chmod 0755, $dir;

    my $plain = $self->{tls} ? RRL::Test::free_port() : $port;
    my @cmd = (RRL::Test::redis_server_binary(),
        '--port', $plain,
        ($self->{tls} ? (RRL::Tls::server_args($self->{tls}, $port),
            '--tls-cluster', 'yes', '--tls-replication', 'yes') : ()),
        '--bind', '127.0.0.1',
        '--cluster-enabled', 'yes',
        '--cluster-config-file', "$dir/nodes.conf",
        '--cluster-node-timeout', $self->{node_timeout},
        '--cluster-replica-validity-factor', '0',
        '--cluster-allow-replica-migration', 'no',
        '--cluster-require-full-coverage',
        ($self->{full_coverage} ? 'yes' : 'no'),
        '--save', '',
        '--appendonly', 'no',
        '--repl-diskless-sync', 'yes',
        '--repl-diskless-sync-delay', '0',
        # replicas show in CLUSTER SLOTS once they have an offset: a ping
        # a second gives them one at once (the default is every 10 s)
        '--repl-ping-replica-period', '1',
        '--dir', $dir,
        '--daemonize', 'no',
        '--logfile', "$dir/redis.log",
        ($self->{acl} ? ('--masteruser', $self->{acl}[0],
                         '--masterauth', $self->{acl}[1]) : ()),
        @{ $self->{args} });

    my $pid = spawn(\@cmd, $dir);
    $self->{nodes}{$port} = { port => $port, pid => $pid, dir => $dir,
        plain => $plain };

    my $deadline = time + 10;
    while (time < $deadline) {
        if (waitpid($pid, WNOHANG) == $pid) {
            delete $self->{nodes}{$port};
            croak "redis-server on $port exited at start: "
                . RRL::Test::read_file("$dir/redis.log")
                . RRL::Test::read_file("$dir/stdout");
        }
        # the default user, before any ACL is set
        my $pong = $self->raw_cli($port, [], 'PING');
        if ($pong eq 'PONG') {
            # ours, not another test's that took the port first
            my ($owner) = $self->raw_cli($port, [], 'INFO', 'server')
                =~ /process_id:(\d+)/;
            if (($owner // 0) != $pid) {
                stop_pid($pid);
                delete $self->{nodes}{$port};
                croak "port $port in use by another redis-server";
            }
            if ($self->{acl}) {
                my ($u, $p) = @{ $self->{acl} };
                my $r = $self->raw_cli($port, [], 'ACL', 'SETUSER', $u, 'on',
                    ">$p", '~*', '&*', '+@all');
                croak "ACL SETUSER on $port: $r" unless $r eq 'OK';
            }
            return $port;
        }
        sleep 0.02;
    }
    croak "redis-server did not answer PING on port $port";
}

sub create {
    my ($self) = @_;

    my @ports = sort { $a <=> $b } keys %{ $self->{nodes} };
    my $out = $self->cli_out(['--cluster', 'create',
        (map { "127.0.0.1:$_" } @ports),
        '--cluster-replicas', $self->{nreplicas}, '--cluster-yes']);
    croak "redis-cli --cluster create failed:\n$out"
        unless $out =~ /All 16384 slots covered/;

    $self->wait_ok(20) or croak "cluster not ready in 20 s:\n"
        . join("\n", map { "$_: " . join(' ', $self->cli($_, 'CLUSTER', 'INFO')) }
            $self->live_ports);

    return $self;
}

sub stop {
    my ($self) = @_;
    return unless $self->{owner} == $$;
    stop_pid($_->{pid}) for values %{ $self->{nodes} };
    $_->{pid} = undef for values %{ $self->{nodes} };
}

END {
    local $?;
    $_->stop for grep { defined } @clusters;
}

# interrupted tests still run END (and so stop the servers)
$SIG{INT} //= sub { exit 130 };
$SIG{TERM} //= sub { exit 143 };


############################################################################
# redis-cli

sub auth_args {
    my ($self) = @_;
    return () unless $self->{acl};
    return ('--user', $self->{acl}[0], '--pass', $self->{acl}[1],
        '--no-auth-warning');
}

sub tls_args {
    my ($self) = @_;
    return $self->{tls} ? RRL::Tls::cli_args($self->{tls}) : ();
}

sub raw_cli {
    my ($self, $port, $auth, @args) = @_;
    return RRL::Test::run_command(RRL::Test::redis_cli_binary(),
        '-h', '127.0.0.1', '-p', $port, $self->tls_args,
        @$auth, '--raw', @args);
}

# cli($port, @command): one command to one node (no redirection); the
# output in scalar context, its lines in list context
sub cli {
    my ($self, $port, @args) = @_;
    return $self->raw_cli($port, [$self->auth_args], @args);
}

# cli_out([redis-cli arguments]): redis-cli with the ACL user if any; its
# output (trailing newline removed), $? its exit status
sub cli_out {
    my ($self, $args) = @_;
    return scalar RRL::Test::run_command(RRL::Test::redis_cli_binary(),
        $self->tls_args, $self->auth_args, @$args);
}

sub cli_ok {
    my ($self, $port, @args) = @_;
    my $r = $self->cli($port, @args);
    croak "node $port: @args: $r" unless $r eq 'OK';
    return $r;
}


############################################################################
# topology

sub ports { sort { $a <=> $b } keys %{ $_[0]{nodes} } }

# seeds(@ports): "127.0.0.1:p1 127.0.0.1:p2 ..." for redis_ratelimit_server
# (the primaries by default)
sub seeds {
    my ($self, @ports) = @_;
    @ports = $self->primaries unless @ports;
    return join ' ', map { "127.0.0.1:$_" } @ports;
}

# the slot of a key as Redis computes it (CLUSTER KEYSLOT)
sub keyslot_redis {
    my ($self, $key) = @_;
    return scalar $self->cli(($self->live_ports)[0], 'CLUSTER', 'KEYSLOT', $key);
}

sub live_ports {
    my ($self) = @_;
    return grep { $self->{nodes}{$_}{pid} } $self->ports;
}

sub pid { $_[0]{nodes}{ $_[1] }{pid} }
sub plain_port { $_[0]{nodes}{ $_[1] }{plain} }
sub node_dir { $_[0]{nodes}{ $_[1] }{dir} }

# CLUSTER NODES as a node sees it: port => {id, port, flags => {..},
# master (id or '-'), slots => [[first, last], ...], role}
sub nodes_info {
    my ($self, $via) = @_;
    $via //= ($self->live_ports)[0];
    my %n;
    for my $l ($self->cli($via, 'CLUSTER', 'NODES')) {
        my ($id, $addr, $flags, $master, undef, undef, undef, undef, @slots)
            = split ' ', $l;
        next unless defined $flags && $addr =~ /:(\d+)@/;
        my $port = $1;
        my %f = map { $_ => 1 } split /,/, $flags;
        $n{$port} = {
            id => $id, port => $port, flags => \%f, master => $master,
            role => ($f{master} ? 'master' : 'slave'),
            slots => [map { /^(\d+)(?:-(\d+))?$/ ? [$1, $2 // $1] : () } @slots],
        };
    }
    return \%n;
}

sub node_id {
    my ($self, $port) = @_;
    return $self->{ids}{$port} //= $self->cli($port, 'CLUSTER', 'MYID');
}

# the primaries serving slots (as $via sees it), in slot order
sub primaries {
    my ($self, $via) = @_;
    my $n = $self->nodes_info($via);
    return map { $_->{port} }
        sort { $a->{slots}[0][0] <=> $b->{slots}[0][0] }
        grep { $_->{role} eq 'master' && !$_->{flags}{fail} && @{ $_->{slots} } }
        values %$n;
}

# replicas of a primary (ports), as $via sees it
sub replicas_of {
    my ($self, $primary, $via) = @_;
    my $n = $self->nodes_info($via);
    my $id = $n->{$primary}{id} // croak "unknown node $primary";
    my @r = sort { $a <=> $b } map { $_->{port} }
        grep { $_->{master} eq $id && !$_->{flags}{fail} } values %$n;
    return @r;
}

# slot ranges of a primary
sub slots_of {
    my ($self, $primary, $via) = @_;
    return @{ $self->nodes_info($via)->{$primary}{slots} || [] };
}

# the port serving a slot, as $via sees it (CLUSTER SLOTS)
sub slot_owner {
    my ($self, $slot, $via) = @_;
    my $map = $self->slot_map($via);
    for my $r (@$map) {
        return $r->[2] if $slot >= $r->[0] && $slot <= $r->[1];
    }
    return undef;
}

# CLUSTER SLOTS as [[first, last, primary port, replica ports...], ...]
sub slot_map {
    my ($self, $via) = @_;
    $via //= ($self->live_ports)[0];
    my @l = $self->cli($via, 'CLUSTER', 'SLOTS');
    # --raw flattens: first, last, then per node: ip, port, id and (7.0)
    # an empty line for the empty metadata map
    my @map;
    my $i = 0;
    while ($i < @l) {
        last unless $l[$i] =~ /^\d+$/ && ($l[$i + 1] // '') =~ /^\d+$/;
        my @r = ($l[$i], $l[$i + 1]);
        $i += 2;
        # an address, or the hostname a node announces (7.0)
        while ($i + 2 < @l && $l[$i] =~ /^(?:\d+\.\d+\.\d+\.\d+|localhost)$/) {
            push @r, $l[$i + 1];
            $i += 3;
            # 7.0: networking metadata, a map ("ip", "hostname"), empty
            # when neither is announced
            while ($i < @l) {
                if ($l[$i] eq '') { $i++ }
                elsif ($l[$i] =~ /^(?:ip|hostname)$/) { $i += 2 }
                else { last }
            }
        }
        push @map, \@r;
    }
    return [sort { $a->[0] <=> $b->[0] } @map];
}

sub slot_map_text {
    my ($self, $via) = @_;
    return join ';', map { "$_->[0]-$_->[1]:$_->[2]("
        . join(',', sort @$_[3 .. $#$_]) . ')' } @{ $self->slot_map($via) };
}

# wait_ok($timeout, replicas => 1): every live node says cluster_state:ok
# and shows the same slot map (covering 16384 slots), and every replica's
# link is up; with replicas => 1 (the default) each primary has its
# replicas in that map
sub wait_ok {
    my ($self, $timeout, %o) = @_;
    my $want_replicas = $o{replicas} // 1;
    my $deadline = time + ($timeout // 10);
    while (time < $deadline) {
        my $ok = 1;
        my %maps;
        for my $p ($self->live_ports) {
            my $info = $self->cli($p, 'CLUSTER', 'INFO');
            if ($info !~ /cluster_state:ok/ || $info !~ /cluster_slots_ok:16384/) {
                $ok = 0;
                last;
            }
            $maps{ $self->slot_map_text($p) }++;
        }
        if ($ok && keys %maps == 1) {
            my $map = $self->slot_map;
            my $slots = 0;
            $slots += $_->[1] - $_->[0] + 1 for @$map;
            $ok = 0 if $slots != 16384;
            if ($ok && $want_replicas) {
                for my $r (@$map) {
                    $ok = 0 if @$r - 3 < $self->{nreplicas};
                    for my $rep (@$r[3 .. $#$r]) {
                        my $i = $self->cli($rep, 'INFO', 'replication');
                        $ok = 0 unless $i =~ /master_link_status:up/;
                    }
                }
            }
            return 1 if $ok;
        }
        sleep 0.05;
    }
    return 0;
}


############################################################################
# keys

# a client key "$prefix<i>" whose limit key in $zone is served by $primary
sub key_on {
    my ($self, $primary, $zone, $prefix, $skip) = @_;
    my @ranges = $self->slots_of($primary);
    $skip //= 0;
    for (my $i = 0; ; $i++) {
        my $s = rrl_slot($zone, "$prefix$i");
        next unless grep { $s >= $_->[0] && $s <= $_->[1] } @ranges;
        return "$prefix$i" unless $skip--;
    }
}

# the rrl:* keys stored on a node
sub rrl_keys {
    my ($self, $port, $pattern) = @_;
    return grep { length } $self->cli($port, '--scan', '--pattern',
        $pattern // 'rrl:*');
}

# module connections of a node (CLIENT LIST lines named nginx-redis-ratelimit)
sub module_clients {
    my ($self, $port) = @_;
    return grep { /\bname=nginx-redis-ratelimit\b/ }
        $self->cli($port, 'CLIENT', 'LIST');
}

# INFO errorstats as {MOVED => n, ASK => n, ...}
sub errorstats {
    my ($self, $port) = @_;
    my %e;
    for ($self->cli($port, 'INFO', 'errorstats')) {
        $e{$1} = $2 if /^errorstat_(\S+):count=(\d+)/;
    }
    return \%e;
}

# INFO commandstats calls as {'evalsha' => n, 'cluster|slots' => n, ...}
sub commandstats {
    my ($self, $port) = @_;
    my %c;
    for ($self->cli($port, 'INFO', 'commandstats')) {
        $c{$1} = $2 if /^cmdstat_(\S+):calls=(\d+)/;
    }
    return \%c;
}

sub reset_stats {
    my ($self) = @_;
    $self->cli_ok($_, 'CONFIG', 'RESETSTAT') for $self->live_ports;
}


############################################################################
# resharding and failover

# migrate_slot($slot, $to, batch => 100, pause => 0, before_keys => sub,
# after_keys => sub): moves a slot by hand, as redis-cli --cluster
# reshard does: SETSLOT IMPORTING on the target, MIGRATING on the source,
# MIGRATE the keys in batches (pause seconds after each), then SETSLOT
# NODE on the target, the source and every other primary; waits until
# every node agrees. Returns {from, to, keys (moved), seconds}.
sub migrate_slot {
    my ($self, $slot, $to, %o) = @_;
    my $start = time;
    my $from = $self->slot_owner($slot) // croak "slot $slot has no owner";
    croak "slot $slot is on $to already" if $from == $to;
    my ($from_id, $to_id) = map { $self->node_id($_) } $from, $to;
    my $batch = $o{batch} // 100;

    $self->cli_ok($to, 'CLUSTER', 'SETSLOT', $slot, 'IMPORTING', $from_id);
    $self->cli_ok($from, 'CLUSTER', 'SETSLOT', $slot, 'MIGRATING', $to_id);
    $o{before_keys}->() if $o{before_keys};

    my @auth = $self->{acl} ? ('AUTH2', @{ $self->{acl} }) : ();
    my $moved = 0;
    while (1) {
        my @keys = grep { length }
            $self->cli($from, 'CLUSTER', 'GETKEYSINSLOT', $slot, $batch);
        last unless @keys;
        my $r = $self->cli($from, 'MIGRATE', '127.0.0.1', $to, '', 0, 5000,
            @auth, 'KEYS', @keys);
        croak "MIGRATE of slot $slot ($from -> $to): $r"
            unless $r eq 'OK' || $r eq 'NOKEY';
        $moved += @keys;
        sleep $o{pause} if $o{pause};
    }
    $o{after_keys}->() if $o{after_keys};

    my @others = grep { $_ != $to && $_ != $from } $self->primaries;
    $self->cli_ok($_, 'CLUSTER', 'SETSLOT', $slot, 'NODE', $to_id)
        for $to, $from, @others;

    my $deadline = time + 10;
    while (time < $deadline) {
        last unless grep { ($self->slot_owner($slot, $_) // 0) != $to }
            $self->live_ports;
        sleep 0.02;
    }
    croak "slot $slot: nodes do not agree that $to serves it"
        if grep { ($self->slot_owner($slot, $_) // 0) != $to } $self->live_ports;

    return { from => $from, to => $to, keys => $moved,
        seconds => time - $start };
}

# reshard_cli($n, $from, $to): redis-cli --cluster reshard of $n slots
sub reshard_cli {
    my ($self, $n, $from, $to) = @_;
    my $out = $self->cli_out(['--cluster', 'reshard', "127.0.0.1:$from",
        '--cluster-from', $self->node_id($from),
        '--cluster-to', $self->node_id($to),
        '--cluster-slots', $n, '--cluster-yes']);
    croak "redis-cli --cluster reshard failed:\n$out" if $?;
    return $out;
}

sub role {
    my ($self, $port) = @_;
    my @r = $self->cli($port, 'ROLE');
    return $r[0] // '';
}

# failover($replica, $mode): CLUSTER FAILOVER [FORCE|TAKEOVER] on a
# replica; waits until it is a primary and every live node agrees on the
# slot map. Returns the seconds until the replica said it is a primary.
sub failover {
    my ($self, $replica, $mode, $timeout) = @_;
    my $start = time;
    $self->cli_ok($replica, 'CLUSTER', 'FAILOVER', $mode ? ($mode) : ());
    my $promoted = $self->wait_role($replica, 'master', $timeout // 10);
    croak "replica $replica not promoted" unless defined $promoted;
    $self->wait_ok(10, replicas => 0) or croak 'cluster not ok after failover';
    return $promoted - $start;
}

# wait_role($port, $role, $timeout): the time it took that role, or undef
sub wait_role {
    my ($self, $port, $role, $timeout) = @_;
    my $deadline = time + ($timeout // 10);
    while (time < $deadline) {
        return time if $self->role($port) eq $role;
        sleep 0.01;
    }
    return undef;
}

# kill_node($port): SIGKILL; returns the time of the kill
sub kill_node {
    my ($self, $port) = @_;
    my $pid = $self->{nodes}{$port}{pid} or croak "node $port not running";
    kill 'KILL', $pid;
    my $t = time;
    reap($pid, 5);
    $self->{nodes}{$port}{pid} = undef;
    return $t;
}

# wait_promoted($replica, $timeout): the time the replica became a
# primary (polled every 10 ms), or undef
sub wait_promoted {
    my ($self, $replica, $timeout) = @_;
    return $self->wait_role($replica, 'master', $timeout);
}

1;
