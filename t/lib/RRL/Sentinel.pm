package RRL::Sentinel;

# Redis under Sentinel for end-to-end tests, inside an RRL::Test's
# directory: one primary, one replica and three Sentinels on loopback
# (down-after-milliseconds 1000 by default, so a failover takes a few
# seconds). new() returns once the replica's link is up and every Sentinel
# knows the primary, the replica and the two other Sentinels
# (SENTINEL CKQUORUM). Every process is stopped when the test file ends,
# dies or is interrupted (as RRL::Cluster's).
#
#   my $s = RRL::Sentinel->new($t, name => 'mymaster',
#       user => ['rrl', 'secret'],       # ACL user on the data nodes
#       password => 'default-secret',    # requirepass of the data nodes
#       sentinel_password => 's3');      # requirepass of the Sentinels
#   $s->seeds;                 # "127.0.0.1:s1 127.0.0.1:s2 127.0.0.1:s3"
#   $s->primary;               # port the Sentinels name now
#   my $t0 = $s->kill_primary; # kill -9; returns the time
#   my $t1 = $s->wait_switch($old_port, 15);   # all Sentinels name another
#   $s->cli($port, @command);  # redis-cli to a data node (as the ACL user)
#   $s->scli($port, @command); # redis-cli to a Sentinel
#
# With tls => $cert (RRL::Tls::cert), the data nodes serve TLS only (their
# replication too), and the Sentinels speak TLS to them and to each other,
# and serve TLS on a port of their own besides their plain one:
# $s->seeds(tls => 1) names those.

use strict;
use warnings;

use Carp qw(croak);
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Process qw(spawn reap stop_pid);
use RRL::Tls;

my @all;    # for END

sub new {
    my ($class, $t, %o) = @_;

    my $self = bless {
        t => $t,
        dir => $t->testdir . '/sentinel',
        name => $o{name} // 'mymaster',
        user => $o{user},
        password => $o{password},
        sentinel_password => $o{sentinel_password},
        down_after => $o{down_after} // 1000,
        failover_timeout => $o{failover_timeout} // 10000,
        nsentinels => $o{sentinels} // 3,
        tls => $o{tls},
        data => {},        # port => {port, pid, dir, conf}
        sentinels => {},   # port => {port, pid, dir, conf}
        owner => $$,
    }, $class;
    $t->register_servers($self, \@all);

    my $start = time;

    # free ports, checked again by each server's process_id: another test
    # may take one first; then everything starts again on new ports
    for my $attempt (1 .. 3) {
        my $ok = eval {
            my %taken;
            my @ports;
            while (@ports < 2 + $self->{nsentinels}) {
                my $port = RRL::Test::free_port();
                push @ports, $port unless $taken{$port}++;
            }
            my ($p, $r, @s) = @ports;
            $self->{first_primary} = $p;
            $self->start_data($p);
            $self->start_data($r, $p);
            $self->start_sentinel($_, $p) for @s;
            1;
        };
        last if $ok;
        my $err = $@;
        $self->stop;
        $self->{data} = {};
        $self->{sentinels} = {};
        croak $err if $attempt == 3 || $err !~ /in use/i;
    }

    $self->wait_ready(20) or croak "Sentinels not ready in 20 s: "
        . join("\n", map { "$_: " . $self->scli($_, 'SENTINEL', 'CKQUORUM',
            $self->{name}) } $self->sentinel_ports);

    $self->{started_in} = time - $start;

    return $self;
}

sub write_conf {
    my ($self, $file, @lines) = @_;
    open my $fh, '>', $file or croak "$file: $!";
    print $fh map { "$_\n" } @lines;
    close $fh;
    chmod 0644, $file;
}

sub quote { my $v = $_[0]; $v =~ s/(["\\])/\\$1/g; qq{"$v"} }

# a data node, with a config file (Sentinel rewrites it at a failover)
sub start_data {
    my ($self, $port, $replicaof) = @_;
    my $dir = "$self->{dir}/redis-$port";
    mkdir $dir;
    chmod 0755, $dir;
    my $conf = "$dir/redis.conf";

    unless (-e $conf) {
        my ($u, $up) = @{ $self->{user} || [] };
        $self->write_conf($conf,
            ($self->{tls} ? ('port 0', $self->tls_conf($port)) : "port $port"),
            'bind 127.0.0.1',
            'save ""',
            'appendonly no',
            "dir $dir",
            'daemonize no',
            "logfile $dir/redis.log",
            'repl-diskless-sync yes',
            'repl-diskless-sync-delay 0',
            'repl-ping-replica-period 1',
            (defined $self->{password}
                ? ('requirepass ' . quote($self->{password})) : ()),
            (defined $u ? ("user $u on >$up ~* &* +\@all",
                "masteruser $u", 'masterauth ' . quote($up))
             : defined $self->{password}
                ? ('masterauth ' . quote($self->{password})) : ()),
            ($replicaof ? ("replicaof 127.0.0.1 $replicaof") : ()));
    }

    # a restart: replicaof given on the command line, so that Sentinel
    # need not convert a node that says it is a primary (it waits 8 s)
    my @extra = $self->{data}{$port} && $replicaof
        ? ('--replicaof', '127.0.0.1', $replicaof) : ();
    my $pid = spawn(
        [RRL::Test::redis_server_binary(), $conf, @extra], $dir);
    $self->{data}{$port} = { port => $port, pid => $pid, dir => $dir,
        conf => $conf };

    my $deadline = time + 10;
    while (time < $deadline) {
        if (waitpid($pid, WNOHANG) == $pid) {
            $self->{data}{$port}{pid} = undef;
            croak "redis-server on $port exited at start: "
                . RRL::Test::read_file("$dir/redis.log");
        }
        if ($self->cli($port, 'PING') eq 'PONG') {
            # ours, not another test's that took the port first
            my ($owner) = $self->cli($port, 'INFO', 'server') =~ /process_id:(\d+)/;
            croak "port $port in use by another redis-server"
                unless ($owner // 0) == $pid;
            return $port;
        }
        sleep 0.02;
    }
    croak "redis-server did not answer PING on port $port";
}

sub start_sentinel {
    my ($self, $port, $primary) = @_;
    my $dir = "$self->{dir}/sentinel-$port";
    mkdir $dir;
    chmod 0755, $dir;
    my $conf = "$dir/sentinel.conf";
    my $name = $self->{name};
    my ($u, $up) = @{ $self->{user} || [] };

    my $tls_port = $self->{tls} ? RRL::Test::free_port() : undef;
    $self->write_conf($conf,
        "port $port",
        ($self->{tls} ? $self->tls_conf($tls_port) : ()),
        'bind 127.0.0.1',
        'daemonize no',
        "dir $dir",
        "logfile $dir/sentinel.log",
        "sentinel monitor $name 127.0.0.1 $primary 2",
        "sentinel down-after-milliseconds $name $self->{down_after}",
        "sentinel failover-timeout $name $self->{failover_timeout}",
        "sentinel parallel-syncs $name 1",
        # the Sentinels speak to the data nodes as the ACL user if any
        (defined $u ? ("sentinel auth-user $name $u",
                       "sentinel auth-pass $name " . quote($up))
         : defined $self->{password}
            ? ("sentinel auth-pass $name " . quote($self->{password})) : ()),
        (defined $self->{sentinel_password}
            ? ('requirepass ' . quote($self->{sentinel_password}),
               'sentinel sentinel-pass ' . quote($self->{sentinel_password}))
            : ()));

    my $pid = spawn(
        [RRL::Test::redis_server_binary(), $conf, '--sentinel'], $dir);
    $self->{sentinels}{$port} = { port => $port, pid => $pid, dir => $dir,
        conf => $conf, tls_port => $tls_port };

    my $deadline = time + 10;
    while (time < $deadline) {
        if (waitpid($pid, WNOHANG) == $pid) {
            $self->{sentinels}{$port}{pid} = undef;
            croak "sentinel on $port exited at start: "
                . RRL::Test::read_file("$dir/sentinel.log");
        }
        if ($self->scli($port, 'PING') eq 'PONG') {
            my ($owner) = $self->scli($port, 'INFO', 'server') =~ /process_id:(\d+)/;
            croak "port $port in use by another redis-server"
                unless ($owner // 0) == $pid;
            return $port;
        }
        sleep 0.02;
    }
    croak "sentinel did not answer PING on port $port";
}

# TLS on $port, for clients and replication (a Sentinel's connections too)
sub tls_conf {
    my ($self, $port) = @_;
    my %a = RRL::Tls::server_args($self->{tls}, $port);
    return ((map { my $k = $_; $k =~ s/^--//; "$k $a{$_}" } sort keys %a),
        'tls-replication yes');
}

sub stop {
    my ($self) = @_;
    return unless $self->{owner} == $$;
    for my $n (values %{ $self->{sentinels} }, values %{ $self->{data} }) {
        stop_pid($n->{pid});
        $n->{pid} = undef;
    }
}

END {
    local $?;
    $_->stop for grep { defined } @all;
}


############################################################################
# redis-cli

sub data_auth {
    my ($self) = @_;
    return ('--user', $self->{user}[0], '--pass', $self->{user}[1],
        '--no-auth-warning') if $self->{user};
    return ('-a', $self->{password}, '--no-auth-warning')
        if defined $self->{password};
    return ();
}

sub tls_args {
    my ($self) = @_;
    return $self->{tls} ? RRL::Tls::cli_args($self->{tls}) : ();
}

# cli($port, @command): a data node, as the ACL user (else the default
# user with its password)
sub cli {
    my ($self, $port, @args) = @_;
    return RRL::Test::run_command(RRL::Test::redis_cli_binary(),
        '-h', '127.0.0.1', '-p', $port, $self->tls_args,
        $self->data_auth, '--raw', @args);
}

# cli_db($port, $db, @command)
sub cli_db {
    my ($self, $port, $db, @args) = @_;
    return RRL::Test::run_command(RRL::Test::redis_cli_binary(),
        '-h', '127.0.0.1', '-p', $port, $self->tls_args,
        $self->data_auth, '-n', $db, '--raw', @args);
}

# scli($port, @command): a Sentinel
sub scli {
    my ($self, $port, @args) = @_;
    return RRL::Test::run_command(RRL::Test::redis_cli_binary(),
        '-h', '127.0.0.1', '-p', $port,
        (defined $self->{sentinel_password}
            ? ('-a', $self->{sentinel_password}, '--no-auth-warning') : ()),
        '--raw', @args);
}


############################################################################
# topology

sub sentinel_ports { sort { $a <=> $b } keys %{ $_[0]{sentinels} } }
sub data_ports { sort { $a <=> $b } keys %{ $_[0]{data} } }
sub name { $_[0]{name} }

# seeds(tls => 1): the Sentinels' TLS ports
sub seeds {
    my ($self, %o) = @_;
    return join ' ', map { "127.0.0.1:"
        . ($o{tls} ? $self->{sentinels}{$_}{tls_port} : $_) }
        $self->sentinel_ports;
}

# the primary's port as a Sentinel names it (the first one by default)
sub primary {
    my ($self, $via) = @_;
    $via //= ($self->sentinel_ports)[0];
    my @a = $self->scli($via, 'SENTINEL', 'get-master-addr-by-name',
        $self->{name});
    return $a[1];
}

# the data node that is not the primary
sub replica {
    my ($self) = @_;
    my $p = $self->primary;
    my ($r) = grep { $_ != $p } $self->data_ports;
    return $r;
}

sub role {
    my ($self, $port) = @_;
    my @r = $self->cli($port, 'ROLE');
    return $r[0] // '';
}

sub running { $_[0]{data}{ $_[1] } && $_[0]{data}{ $_[1] }{pid} }

# every Sentinel: CKQUORUM OK with all Sentinels usable, knows the replica
# (not down), and the replica's link is up
sub wait_ready {
    my ($self, $timeout) = @_;
    my $n = $self->{nsentinels};
    my $deadline = time + ($timeout // 10);
    while (time < $deadline) {
        my $ok = 1;
        my $primary = $self->primary;
        my @replicas = grep { $_ != $primary && $self->running($_) }
            $self->data_ports;
        for my $s ($self->sentinel_ports) {
            my $q = $self->scli($s, 'SENTINEL', 'CKQUORUM', $self->{name});
            $ok = 0 unless $q =~ /^OK $n usable/;
            ($self->primary($s) // 0) == $primary or $ok = 0;
            my $reps = join ' ', $self->scli($s, 'SENTINEL', 'REPLICAS',
                $self->{name});
            for my $r (@replicas) {
                # flags of that replica: "slave" alone (not s_down, ...)
                $ok = 0 unless $reps =~ /\bport $r runid \S+ flags slave /;
            }
            last unless $ok;
        }
        for my $r (@replicas) {
            $ok = 0 unless $self->cli($r, 'INFO', 'replication')
                =~ /master_link_status:up/;
        }
        return 1 if $ok;
        sleep 0.1;
    }
    return 0;
}

# kill_primary(): kill -9 the current primary; returns (time, port)
sub kill_primary {
    my ($self) = @_;
    my $p = $self->primary;
    my $pid = $self->{data}{$p}{pid} or croak "primary $p not running";
    kill 'KILL', $pid;
    my $t = time;
    reap($pid, 5);
    $self->{data}{$p}{pid} = undef;
    return wantarray ? ($t, $p) : $t;
}

# restart($port): a killed data node again, as a replica of the current
# primary (as Sentinel would make it)
sub restart {
    my ($self, $port) = @_;
    croak "node $port is running" if $self->running($port);
    return $self->start_data($port, $self->primary);
}

# wait_switch($old, $timeout): polls every Sentinel (SENTINEL
# get-master-addr-by-name) until one names a primary other than $old;
# returns (time the first one did, time all did), or () on timeout
sub wait_switch {
    my ($self, $old, $timeout) = @_;
    my $deadline = time + ($timeout // 15);
    my ($first, %done);
    my @s = $self->sentinel_ports;
    while (time < $deadline) {
        for my $s (@s) {
            next if $done{$s};
            my $p = $self->primary($s);
            if (defined $p && $p ne $old) {
                $done{$s} = time;
                $first //= $done{$s};
            }
        }
        return ($first, time) if keys %done == @s;
        sleep 0.02;
    }
    return ();
}

# failover(): SENTINEL FAILOVER (planned: the old primary stays up, as a
# replica); waits for the switch; returns the seconds it took
sub failover {
    my ($self, $timeout) = @_;
    my $old = $self->primary;
    my $start = time;
    my $r = $self->scli(($self->sentinel_ports)[0], 'SENTINEL', 'FAILOVER',
        $self->{name});
    croak "SENTINEL FAILOVER: $r" unless $r eq 'OK';
    my ($first, $all) = $self->wait_switch($old, $timeout // 15);
    croak 'no switch after SENTINEL FAILOVER' unless $all;
    return $all - $start;
}

# +switch-master lines in the Sentinels' logs
sub switch_lines {
    my ($self) = @_;
    return map { grep { /\+switch-master/ } split /\n/,
        RRL::Test::read_file("$self->{sentinels}{$_}{dir}/sentinel.log") }
        $self->sentinel_ports;
}

1;
